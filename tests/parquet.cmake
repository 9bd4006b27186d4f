# tests/parquet.cmake - the Parquet writer and reader (storage/parquet).
#   test_parquet          codecs, round trips, statistics, refusals, hostile bytes
#   test_parquet_interop        arrow-rs files (tests/integration/parquet_fixtures)
#   test_parquet_interop_delta  Spark/Databricks files of the Delta tables in
#                               STRIKE_TESTDATA_DIR (label `fixtures`)
strike_unit_test(test_parquet SOURCES unit/test_parquet.c LIBS strike_parquet)
#   test_parquet_threads  test_parquet's test_threads_* alone (the writer's helper, the
#                         reader's read-ahead), in the tsan set too
add_test(NAME test_parquet_threads COMMAND test_parquet)
set_tests_properties(test_parquet_threads PROPERTIES LABELS "unit;tsan" TIMEOUT 600
                     ENVIRONMENT "${STRIKE_TEST_ENV};STRIKE_TEST_FILTER=test_threads_*")
add_dependencies(tsan_tests test_parquet)
strike_unit_test(test_parquet_interop SOURCES unit/test_parquet_interop.c
                 LIBS strike_parquet PkgConfig::JANSSON)
set_property(TEST test_parquet_interop APPEND PROPERTY ENVIRONMENT "STRIKE_TEST_FILTER=test_arrow_*")
add_test(NAME test_parquet_interop_delta COMMAND test_parquet_interop)
set_tests_properties(test_parquet_interop_delta PROPERTIES LABELS unit TIMEOUT 600
                     ENVIRONMENT "${STRIKE_TEST_ENV};STRIKE_TEST_FILTER=test_delta_*")
#   test_parquet_duckdb        DuckDB reads our files, we read DuckDB's and arrow-rs' files
#   test_parquet_duckdb_spark  we read the Spark/Databricks files of STRIKE_TESTDATA_DIR as
#                              DuckDB does (label `fixtures`)
strike_py_test(test_parquet_duckdb test_parquet_duckdb.py TIMEOUT 1200 ARGS ParquetInterop)
strike_py_test(test_parquet_duckdb_spark test_parquet_duckdb.py ARGS SparkFiles)
strike_needs_dir(STRIKE_TESTDATA_DIR test_parquet_interop_delta test_parquet_duckdb_spark)
# bench_parquet: numbers, not a test (tests/bench/bench_parquet.mjs runs it next to DuckDB)
add_executable(bench_parquet bench/bench_parquet.c)
target_link_libraries(bench_parquet PRIVATE strike_parquet)
