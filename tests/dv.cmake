# tests/dv.cmake - deletion-vector codecs (storage/dv) and `strike dv`.
# test_dv_fixtures and test_dv_cli read the upstream fixtures of
# STRIKE_TESTDATA_DIR (label `fixtures`: not run when that folder is absent;
# a file missing from it fails them). Run: ctest -R dv
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
strike_needs_dir(STRIKE_TESTDATA_DIR test_dv_fixtures test_dv_cli test_iceberg_reader)

# Benchmark (prints numbers, not a test): build/<dir>/bin/bench_dv [--runs N];
# tests/bench/dv_peer.mjs times the npm `roaring` package on the same set.
add_executable(bench_dv bench/bench_dv.c)
target_link_libraries(bench_dv PRIVATE strike_dv roaring_c)
