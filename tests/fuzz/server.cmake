# tests/fuzz/server.cmake - server/ fuzz targets.
#   fuzz_grpc_requests  protobuf -> request validation and conversion (no engine),
#                       the ScanBatch encoder against protobuf-c's decoder, the
#                       health request parser and the idempotent-replay parsers
strike_fuzz_target(fuzz_grpc_requests fuzz_grpc_requests.c LIBS strike_server strike_proto
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_grpc_seeds)
#   fuzz_cdc            Debezium bodies (JSON, arrays, NDJSON, CloudEvents) -> events
#                       (server/cdc.h), and every field through cdc_value
strike_fuzz_target(fuzz_cdc fuzz_cdc.c LIBS strike_server
                   CORPUS ${STRIKE_OWN_DATA_DIR}/debezium)
#   fuzz_auth           the tokens file and Authorization values (server/auth.c)
strike_fuzz_target(fuzz_auth fuzz_auth.c LIBS strike_server
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/auth
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/auth.dict)
#   fuzz_http           what our code parses from a request (server/http_parse.h):
#                       route and captures, %-escapes, integers, Range, media
#                       types, X-Request-Id, Idempotency-Key, ?table=, ?format=
strike_fuzz_target(fuzz_http fuzz_http.c LIBS strike_server
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/http
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/http.dict)
