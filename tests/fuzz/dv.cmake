# tests/fuzz/dv.cmake - libFuzzer targets for every deletion-vector decoder,
# seeded with the upstream fixture files of STRIKE_TESTDATA_DIR and, for some,
# the corpus a campaign grew (tests/fuzz/corpus/<target>, minimized with
# -merge=1). The targets seeded from STRIKE_TESTDATA_DIR are in the label
# `fixtures` (not run when it is absent).
set(_dv_td ${STRIKE_TESTDATA_DIR})
strike_fuzz_target(dv_roaring32_fuzzer fuzz_dv_roaring32.c LIBS strike_dv
  CORPUS ${_dv_td}/roaring-format-spec/testdata ${_dv_td}/croaring/tests/testdata
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_roaring64_fuzzer fuzz_dv_roaring64.c LIBS strike_dv
  CORPUS ${_dv_td}/roaring-format-spec/testdata64 ${_dv_td}/croaring/tests/testdata
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_iceberg_fuzzer fuzz_dv_iceberg.c LIBS strike_dv
  CORPUS ${_dv_td}/iceberg/deletes
         ${CMAKE_CURRENT_SOURCE_DIR}/corpus/dv_iceberg_fuzzer
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_puffin_fuzzer fuzz_dv_puffin.c LIBS strike_dv
  CORPUS ${_dv_td}/iceberg/puffin/v1 ${_dv_td}/iceberg-go/table/dv/testdata/deletes
         ${CMAKE_CURRENT_SOURCE_DIR}/corpus/dv_puffin_fuzzer
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_delta_fuzzer fuzz_dv_delta.c LIBS strike_dv
  CORPUS ${_dv_td}/delta-kernel-rs ${_dv_td}/delta/table-with-dv-large
         ${CMAKE_CURRENT_SOURCE_DIR}/corpus/dv_delta_fuzzer
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_paimon_fuzzer fuzz_dv_paimon.c LIBS strike_dv
  CORPUS ${_dv_td}/paimon/compatibility
         ${CMAKE_CURRENT_SOURCE_DIR}/corpus/dv_paimon_fuzzer
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_fuzz_target(dv_poslist_fuzzer fuzz_dv_poslist.c LIBS strike_dv
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/dv_poslist_fuzzer
  DICT ${CMAKE_CURRENT_SOURCE_DIR}/dv.dict)
strike_needs_dir(STRIKE_TESTDATA_DIR fuzz_dv_roaring32_fuzzer fuzz_dv_roaring64_fuzzer
                 fuzz_dv_iceberg_fuzzer fuzz_dv_puffin_fuzzer fuzz_dv_delta_fuzzer
                 fuzz_dv_paimon_fuzzer)
