# tests/blob.cmake - the blob store (storage/blob).
#   test_blob   puts that never overwrite, exact range reads, list, batched delete,
#               touch, key checks, Parquet read by ranges
strike_unit_test(test_blob SOURCES unit/test_blob.c LIBS strike_blob strike_parquet strike_s3raw)
#   test_blob_s3  the same on the S3 store (moto_server of the s3 fixture)
strike_on_s3(test_blob test_blob_s3 test_blob)
