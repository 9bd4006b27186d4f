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
# Parquet field ids come with the `iceberg` branch's struct st_column.field_id; until every
# checkout has it, the table is read through its schema.name-mapping.default alone.
include(CheckStructHasMember)
set(CMAKE_REQUIRED_INCLUDES ${CMAKE_SOURCE_DIR}/storage)
check_struct_has_member("struct st_column" field_id "common/types.h" STRIKE_COLUMN_HAS_FIELD_ID
                        LANGUAGE C)
unset(CMAKE_REQUIRED_INCLUDES)
if(STRIKE_COLUMN_HAS_FIELD_ID)
  target_compile_definitions(iceberg_sample PRIVATE STRIKE_COLUMN_HAS_FIELD_ID=1)
endif()
#   test_iceberg_writer  the tests' own Iceberg reader (integration/iceberg_read.mjs: avsc,
#                        DuckDB, its own Puffin and DV decoding) checks that table against the
#                        spec (`check`: no failure at any metadata version) and reads each
#                        snapshot's rows (`rows --lineage`): the rows written minus the DVs,
#                        with the row ids the spec assigns
strike_py_test(test_iceberg_writer test_iceberg_writer.py LABELS iceberg)
