# tests/iceberg.cmake - storage/iceberg: the Avro object container codec and the metadata files.
#   test_avro        encodings byte for byte (the spec's examples), header, determinism,
#                    an Iceberg-like manifest round trip, writer misuse with paths, schemas,
#                    hostile files (hand-made, every truncation, byte flips)
#   test_avro_avsc   npm avsc (an independent implementation) reads what we write, field-ids
#                    and all, and we read what avsc writes (tests/integration/avro_decode.mjs)
strike_unit_test(test_avro SOURCES unit/test_avro.c LIBS strike_iceberg LABELS iceberg)
#   test_iceberg     values (Appendix D), schema / name-mapping / table metadata JSON exactly,
#                    manifests written and read back with inheritance, what the writers refuse,
#                    the Avro schemas against the spec's field tables, the manifest list decoded
strike_unit_test(test_iceberg SOURCES unit/test_iceberg.c LIBS strike_iceberg LABELS iceberg)
# avro_sample: writes the Iceberg-like manifest the avsc test decodes (and the fuzz seeds),
# and prints any container file as JSON through our reader. A test helper, not installed.
add_executable(avro_sample integration/avro_sample.c)
target_link_libraries(avro_sample PRIVATE strike_iceberg)
strike_py_test(test_avro_avsc test_avro_avsc.py LABELS iceberg)
# iceberg_sample: a whole Iceberg v3 table laid out by strike's writers (Parquet data files,
# Puffin DVs, the ice_ metadata: three snapshots with appends, DVs, a rewritten manifest with
# EXISTING and DELETED entries), and what it wrote as JSON. A test helper, not installed.
add_executable(iceberg_sample integration/iceberg_sample.c)
target_link_libraries(iceberg_sample PRIVATE strike_iceberg strike_parquet strike_dv m)
#   test_iceberg_writer  the tests' own Iceberg reader (integration/iceberg_read.mjs: avsc,
#                        DuckDB, its own Puffin and DV decoding) checks that table against the
#                        spec (`check`: no failure at any metadata version) and reads each
#                        snapshot's rows (`rows --lineage`): the rows written minus the DVs,
#                        with the row ids the spec assigns
strike_py_test(test_iceberg_writer test_iceberg_writer.py LABELS iceberg)
# The export and the REST catalog against the real striked, PostgreSQL and independent readers
# (tests/integration/iceberg_util.py: what they share). Each file's parts (unittest classes)
# run as separate tests, each with a database of its own.
#   test_iceberg_export        a table with a key and every type through upserts, deletes by key
#                              and by filter, a compaction, an expiry, erasures by key and by
#                              filter: after each, the reader's rows of the exported metadata ==
#                              /scan at every retained snapshot, `check` clean, metadata/ holds
#                              only what the retained snapshots need, erased values in no column
#                              bound and purged files in no metadata file (History); the
#                              background export alone keeps version-hint.text fresh
#                              (Background); DVs of a table written before the export
#                              (legacy_ref, Puffin blobs naming relative paths) moved to URI-named
#                              blobs, the DV endpoint's bytes and ETag unchanged (Legacy)
#   test_iceberg_export_stats  a file holding a double beyond 2^63 keeps its column statistics
#   test_iceberg_export_expiry a compaction then an expiry with no export between them
#   test_iceberg_export_s3     History on the s3 fixture (moto), read through a boto3 download
strike_py_test(test_iceberg_export test_iceberg_export.py LABELS iceberg ARGS History Background Legacy)
strike_py_test(test_iceberg_export_stats test_iceberg_export.py LABELS iceberg ARGS Statistics)
strike_py_test(test_iceberg_export_expiry test_iceberg_export.py LABELS iceberg ARGS ExpiryBetweenExports)
#   test_iceberg_export_schemas  schema changes between commits (gRPC AlterTable: add, widen,
#                              rename, drop): `schemas` lists each by id with stable field ids,
#                              each snapshot its schema-id, last-column-id the highest ever; the
#                              reader reads each snapshot at its schema, old files' new columns null
strike_py_test(test_iceberg_export_schemas test_iceberg_export.py LABELS iceberg ARGS Schemas)
set_tests_properties(test_iceberg_export_schemas PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
strike_on_s3(test_iceberg_export test_iceberg_export_s3 ${STRIKE_PYTHON}
             ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_iceberg_export.py History)
set_tests_properties(test_iceberg_export_s3 PROPERTIES LABELS "integration;s3;iceberg")
#   test_iceberg_rest          every /iceberg route of --list-routes, valid and invalid, the answers
#                              validated against the Iceberg REST OpenAPI document's schemas (npm
#                              ajv: integration/iceberg_openapi.mjs), loadTable's ETag, planned
#                              scans read by the tests' reader (iceberg_read.mjs tasks) == /scan,
#                              DV entries against the Puffin footers, plan ids on two servers, bad
#                              input in Iceberg's error model changing nothing, auth
#   test_iceberg_rest_tasks    a table of 1,001 data files: plan-tasks, each fetched, == the table
strike_py_test(test_iceberg_rest test_iceberg_rest.py LABELS iceberg
               ARGS Routes Catalog Planning BadInput Auth)
strike_py_test(test_iceberg_rest_tasks test_iceberg_rest.py LABELS iceberg ARGS Tasks)
#   test_iceberg_rest_snapshots  plans of an unknown and of an expired snapshot: 404 naming it
strike_py_test(test_iceberg_rest_snapshots test_iceberg_rest.py LABELS iceberg ARGS Snapshots)
strike_needs_dir(STRIKE_SPECS_DIR test_iceberg_rest test_iceberg_rest_tasks test_iceberg_rest_snapshots)
#   test_iceberg_icebird       npm icebird (integration/icebird_read.mjs), a reader that is not
#                              ours, reads a snapshot without DVs from its metadata file == /scan
strike_py_test(test_iceberg_icebird test_iceberg_icebird.py LABELS iceberg)
