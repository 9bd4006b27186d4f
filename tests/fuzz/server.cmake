# tests/fuzz/server.cmake - server/ fuzz targets.
#   fuzz_grpc_requests  protobuf -> request validation and conversion (no engine),
#                       the ScanBatch encoder against protobuf-c's decoder, the
#                       health request parser and the idempotent-replay parsers
strike_fuzz_target(fuzz_grpc_requests fuzz_grpc_requests.c LIBS strike_server strike_proto
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_grpc_seeds)
