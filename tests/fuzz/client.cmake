# clients fuzz targets: the strike --where language (clients/cli_where.c).
strike_fuzz_target(fuzz_where fuzz_where.c LIBS strike_common PkgConfig::JANSSON
                   CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/where)
target_sources(fuzz_where PRIVATE ${CMAKE_SOURCE_DIR}/clients/cli_where.c)
target_include_directories(fuzz_where PRIVATE ${CMAKE_SOURCE_DIR}/clients)
