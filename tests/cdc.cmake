# CDC endpoint (server/cdc.c, server/service_cdc.c; docs/API.md "CDC endpoint").
#   test_cdc       the envelope decoder on every fixture of tests/data/debezium
#                  (written for strike, read through STRIKE_SOURCE_DIR),
#                  logical types, positions, refusals (no engine)
#   cdc_http       the real striked: every fixture shape, malformed bodies (4xx,
#                  no change), routing, exactly-once, the replay of 10,000 events
#                  with crashes and resends, and the gRPC twin
strike_unit_test(test_cdc SOURCES unit/test_cdc.c LIBS strike_server)
strike_py_test(cdc_http test_cdc.py LABELS http)
#   cdc_schema     --cdc-schema against the real striked: a Debezium replay where
#                  the source adds, widens, renames and drops columns, with striked
#                  killed between a schema commit and its rows; incompatible
#                  changes, refuse and ignore-new (nothing changes); gRPC AlterTable
strike_py_test(cdc_schema test_cdc_schema.py LABELS http)
set_tests_properties(cdc_schema PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
