# tests/dv.cmake - deletion-vector codecs (storage/dv) and `strike dv`.
# The tests read tests/data through STRIKE_TESTDATA_DIR (set by
# STRIKE_TEST_ENV) and fail when a file is missing. Run: ctest -R dv
strike_unit_test(test_dv_set SOURCES unit/test_dv_set.c LIBS strike_dv LABELS dv)
strike_unit_test(test_dv_fixtures SOURCES unit/test_dv_fixtures.c LIBS strike_dv LABELS dv)
strike_unit_test(test_dv_codec SOURCES unit/test_dv_codec.c LIBS strike_dv LABELS dv)
# `strike dv decode|encode` on every fixture (needs the `strike` target).
strike_py_test(test_dv_cli test_dv_cli.py LABELS dv)
# The tests' own Iceberg v3 reader and spec checker (integration/iceberg_read.mjs:
# avsc, DuckDB, its own Puffin/DV decoding) proves itself on a table Spark and
# Iceberg Java wrote (iceberg-tables/ of the shared test data), and its checks on
# corrupted copies of it.
strike_py_test(test_iceberg_reader test_iceberg_reader.py LABELS dv iceberg)

# Benchmark (prints numbers, not a test): build/<dir>/bin/bench_dv [--runs N];
# tests/bench/dv_peer.mjs times the npm `roaring` package on the same set.
add_executable(bench_dv bench/bench_dv.c)
target_link_libraries(bench_dv PRIVATE strike_dv roaring_c)
