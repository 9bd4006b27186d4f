# HTTP front end (server/http*.c): the real striked, PostgreSQL, curl, Python's
# http.client and DuckDB (node, installed by scripts/test-peers.sh BUILD_DIR).
#   http_api      every endpoint and documented error, value forms, DVs, files
#   http_limits   413 (Content-Length and chunked), 16 concurrent clients,
#                 catalog outage (503, recovery), SIGTERM during scans
#   http_readme   the README walkthrough's commands, run and checked
#   http_duckdb   plan + files + DVs read by DuckDB == strike's own scan
# Benchmarks: tests/bench/http_bench.sh BUILD_DIR (Release build).
strike_py_test(http_api test_http_api.py LABELS http tsan)
strike_py_test(http_limits test_http_limits.py LABELS http tsan)
strike_py_test(http_readme test_http_readme.py LABELS http tsan)
strike_py_test(http_duckdb test_http_duckdb.py LABELS http tsan)
