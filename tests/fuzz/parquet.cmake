# tests/fuzz/parquet.cmake - libFuzzer targets for the Parquet reader:
#   parquet_footer_fuzzer  Thrift FileMetaData / PageHeader decoding and footer validation
#   parquet_pages_fuzzer   whole files: every row group, page, codec and encoding
# Seeds: small files from strike, DuckDB and arrow-rs (fuzz_parquet_seeds/), the
# arrow-rs fixtures and the Spark/Databricks files of STRIKE_TESTDATA_DIR (so
# both are in the label `fixtures`: not run when it is absent).
set(_pq_seeds ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_parquet_seeds
  ${CMAKE_CURRENT_SOURCE_DIR}/../integration/parquet_fixtures
  ${STRIKE_TESTDATA_DIR}/delta ${STRIKE_TESTDATA_DIR}/delta-kernel-rs)
strike_fuzz_target(parquet_footer_fuzzer fuzz_parquet_footer.c LIBS strike_parquet
  CORPUS ${_pq_seeds})
strike_fuzz_target(parquet_pages_fuzzer fuzz_parquet_pages.c LIBS strike_parquet
  CORPUS ${_pq_seeds})
strike_needs_dir(STRIKE_TESTDATA_DIR fuzz_parquet_footer_fuzzer fuzz_parquet_pages_fuzzer)
