# tests/fuzz/common.cmake - storage/common fuzz targets.
#   fuzz_jdoc  jdoc against jansson on the same bytes: verdicts, error texts and
#              positions, trees; lit_from_jdoc against jansson's values
strike_fuzz_target(fuzz_jdoc fuzz_jdoc.c LIBS strike_expr PkgConfig::JANSSON
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/json.dict
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/jdoc ${CMAKE_CURRENT_SOURCE_DIR}/corpus/row
                          ${CMAKE_CURRENT_SOURCE_DIR}/corpus/filter)
