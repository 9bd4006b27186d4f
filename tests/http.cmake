# HTTP front end (server/http*.c): the real striked, PostgreSQL, curl, Python's
# http.client and DuckDB (node, installed by scripts/test-peers.sh BUILD_DIR).
#   http_api      every endpoint and documented error, value forms, DVs, files
#   http_limits   413 (Content-Length and chunked), 16 concurrent clients,
#                 catalog outage (503, recovery), SIGTERM during scans
#   http_readme   the README walkthrough's commands (and docs/CLI.md's, with
#                 `strike`), run and checked
#   http_duckdb   plan + files + DVs read by DuckDB == strike's own scan
#   http_memory   a request's peak RSS growth: NDJSON of null lines, deletes
#                 on 1,000 columns (CDC and /changes), an erasure by filter of
#                 540,000 keys (issue 28 item 5; not under TSan: its shadow)
#   test_http_render  an erasure's receipt as HTTP answers it, byte for byte (unit)
# Benchmarks: tests/bench/http_bench.sh BUILD_DIR (Release build).
strike_unit_test(test_http_render SOURCES unit/test_http_render.c LIBS strike_server)
strike_py_test(http_api test_http_api.py LABELS http tsan)
strike_py_test(http_limits test_http_limits.py LABELS http tsan)
strike_py_test(http_readme test_http_readme.py LABELS http tsan)
strike_py_test(http_duckdb test_http_duckdb.py LABELS http tsan)
strike_py_test(http_memory test_memory.py LABELS http)
# Small DVs inline in the catalog: a single-key delete, then a plan's Puffin blob (issue 19).
strike_py_test(http_inline_dv test_inline_dv.py LABELS http)
# http_readme_s3: the README walkthrough once more with --data s3:// (the s3 fixture's moto_server)
strike_on_s3(http_readme http_readme_s3 ${STRIKE_PYTHON}
             ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_http_readme.py)
# test_s3: two striked sharing the catalog and the bucket; the store stopped mid-ingest (s3 only)
add_test(NAME test_s3 COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_s3.py)
set_tests_properties(test_s3 PROPERTIES LABELS "integration;s3" FIXTURES_REQUIRED "pg;s3" TIMEOUT 600
  ENVIRONMENT "${STRIKE_TEST_ENV};PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/integration;PYTHONDONTWRITEBYTECODE=1;${STRIKE_TEST_S3_ENV}")
# http_duckdb_s3: the remote-engine flow on S3: files and Puffin DV blobs read through
# presigned URLs straight from the store (the s3 fixture's moto_server)
strike_on_s3(http_duckdb http_duckdb_s3 ${STRIKE_PYTHON}
             ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_http_duckdb.py)
# test_schema: POST /v1/tables/{t}/schema, reads of old files and old snapshots after changes
strike_py_test(http_schema test_schema.py LABELS http)
