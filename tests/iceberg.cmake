# tests/iceberg.cmake - storage/iceberg: the Avro object container codec.
#   test_avro        encodings byte for byte (the spec's examples), header, determinism,
#                    an Iceberg-like manifest round trip, writer misuse with paths, schemas,
#                    hostile files (hand-made, every truncation, byte flips)
strike_unit_test(test_avro SOURCES unit/test_avro.c LIBS strike_iceberg LABELS iceberg)
