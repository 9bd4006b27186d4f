# tests/fuzz/iceberg.cmake - storage/iceberg.
#   fuzz_avro  Avro container files: hostile bytes into the reader (and what it accepts
#              written again and read back the same); write/read round trips of value
#              sequences drawn from the input, with misuse of the writer now and then.
#              Seeds: files avro_sample wrote (Iceberg's manifest and manifest-list
#              schemas, the target's own) and round-trip inputs (corpus/avro).
strike_fuzz_target(fuzz_avro fuzz_avro.c LIBS strike_iceberg
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/avro
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/avro.dict)
