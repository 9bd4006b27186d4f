# Benchmarks: plain executables (never ctest tests with timed assertions).
# `make bench` (tests/bench/run.sh) runs them next to their peers.
add_executable(bench_engine bench/bench_engine.c)
target_link_libraries(bench_engine PRIVATE strike_engine)
# row 2 with each server's own C client (libcurl for strike, libpq for PostgreSQL)
add_executable(bench_keyed bench/bench_keyed.c)
target_link_libraries(bench_keyed PRIVATE PkgConfig::CURL PkgConfig::PQ)

# bench_quick: the `make bench` harness once in --quick mode (tiny sizes, 2
# rounds), only to prove that it works end to end: it passes when run.sh
# completes and its table has all nine measures, each with numbers or "not
# available". No speed is asserted (under `make test` these are ASan builds).
# run.sh starts its own durable PostgreSQL and striked, and stops them; it
# runs alone (RUN_SERIAL) because it loads both cores for a few seconds.
add_test(NAME bench_quick COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/bench/run.sh ${CMAKE_BINARY_DIR} --quick)
set_tests_properties(bench_quick PROPERTIES LABELS bench ENVIRONMENT "${STRIKE_TEST_ENV}"
                     TIMEOUT 600 RUN_SERIAL TRUE)

# bench_history: the "previous" column of `make bench` and its regression
# marker (tests/bench/bench_history.py), on synthetic runs: no server, fast.
add_test(NAME bench_history COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/test_bench_history.py)
set_tests_properties(bench_history PROPERTIES LABELS "unit;bench" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
                     TIMEOUT 60)

# bench_profile_tools: the text tools of tests/bench/profile.sh (fold_stacks.py,
# log_timings.py) on synthetic perf script output and a synthetic debug log.
add_test(NAME bench_profile_tools COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/test_bench_profile.py)
set_tests_properties(bench_profile_tools PROPERTIES LABELS "unit;bench" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
                     TIMEOUT 60)

# bench_scale_report: `make bench-scale`'s report (tests/bench/scale.py) on synthetic rounds: its
# rows, the goals met or not, and why, from the run's own counters.
add_test(NAME bench_scale_report COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/test_bench_scale.py)
set_tests_properties(bench_scale_report PROPERTIES LABELS "unit;bench" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
                     TIMEOUT 60)
