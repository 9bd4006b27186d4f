# storage/expr fuzz targets: filter JSON and row JSON.
strike_fuzz_target(fuzz_filter fuzz_filter.c LIBS strike_expr m
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/filter
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/json.dict)
strike_fuzz_target(fuzz_row fuzz_row.c LIBS strike_expr m
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/row
                   DICT ${CMAKE_CURRENT_SOURCE_DIR}/json.dict)
