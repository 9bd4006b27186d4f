# tests/blob.cmake - the blob store (storage/blob).
#   test_blob   puts that never overwrite, exact range reads, list, batched delete,
#               touch, key checks, Parquet read by ranges
strike_unit_test(test_blob SOURCES unit/test_blob.c LIBS strike_blob strike_parquet)
