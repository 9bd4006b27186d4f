# Engine tests: a real PostgreSQL (the ctest fixture), the real engine.
add_library(strike_enginetest STATIC lib/enginetest.c)
target_include_directories(strike_enginetest PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/lib)
target_link_libraries(strike_enginetest PUBLIC strike_engine strike_testlib)

strike_unit_test(test_engine PG SOURCES unit/test_engine.c LIBS strike_enginetest LABELS tsan)
strike_unit_test(test_keyenc SOURCES unit/test_keyenc.c LIBS strike_engine)
strike_unit_test(test_hmap SOURCES unit/test_hmap.c LIBS strike_common)
strike_unit_test(test_engine_concurrency PG SOURCES unit/test_engine_concurrency.c
                 LIBS strike_enginetest LABELS tsan)
strike_unit_test(test_engine_faults PG SOURCES unit/test_engine_faults.c LIBS strike_enginetest
                 LABELS tsan)
strike_py_test(test_cli_admin test_cli_admin.py)
# Group commit: one request must not fail its neighbours (issue 13).
strike_unit_test(test_engine_batch PG SOURCES unit/test_engine_batch.c LIBS strike_enginetest
                 LABELS tsan)
set_tests_properties(test_engine_batch PROPERTIES TIMEOUT 180)
# Statement costs that must not grow with history (issue 13).
strike_unit_test(test_engine_history PG SOURCES unit/test_engine_history.c LIBS strike_enginetest)
# Delete by filter: scans outside its table's queue, catches up, commits (issue 13 item 8).
strike_unit_test(test_engine_delete PG SOURCES unit/test_engine_delete.c LIBS strike_enginetest
                 LABELS tsan)
# Compaction: the policy, the key index moved, writes during it carried over (issue 14).
strike_unit_test(test_engine_compact PG SOURCES unit/test_engine_compact.c LIBS strike_enginetest
                 LABELS tsan)
# Snapshot expiry: catalog rows, blobs, expired reads, crash orphans (issue 14).
strike_unit_test(test_engine_expire PG SOURCES unit/test_engine_expire.c LIBS strike_enginetest
                 LABELS tsan)
# Erasure: the marker gone from every file, the receipt's checks, Idempotency-Key (issue 14).
strike_unit_test(test_engine_erase PG SOURCES unit/test_engine_erase.c
                 LIBS strike_enginetest strike_s3raw)
# test_engine_erase_s3: the same on the S3 blob store: unfinished uploads, a versioned bucket
strike_on_s3(test_engine_erase test_engine_erase_s3 test_engine_erase)
# Small DVs inline in the catalog: every reader takes either location, plans flush (issue 19).
strike_unit_test(test_engine_inline PG SOURCES unit/test_engine_inline.c LIBS strike_enginetest)
# test_engine_s3: the engine model test once more, on the S3 blob store (s3 fixture)
strike_on_s3(test_engine test_engine_s3 test_engine)
set_tests_properties(test_engine_s3 PROPERTIES TIMEOUT 2400)
# test_cli_admin_s3: strike fsck and gc once more on s3:// (the s3 fixture)
strike_on_s3(test_cli_admin test_cli_admin_s3 ${STRIKE_PYTHON}
             ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_admin.py)

strike_unit_test(test_engine_schema PG SOURCES unit/test_engine_schema.c LIBS strike_enginetest)
# A catalog of an older schema, with rows, migrates when the engine opens it (schema.c).
strike_unit_test(test_engine_migrate PG SOURCES unit/test_engine_migrate.c LIBS strike_enginetest)

# catalog_table_id: every catalog statement on a per-table catalog table carries table_id (the
# catalog is ready to be distributed by table_id, docs/SCALE.md), read from the source; the
# exceptions are listed in the test with their reasons. No server, fast.
add_test(NAME catalog_table_id COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_catalog_table_id.py)
set_tests_properties(catalog_table_id PROPERTIES LABELS unit ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 60)
