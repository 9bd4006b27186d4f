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
