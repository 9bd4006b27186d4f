# Benchmarks: plain executables (never ctest tests with timed assertions).
# `make bench` (tests/bench/run.sh) runs them next to their peers.
add_executable(bench_engine bench/bench_engine.c)
target_link_libraries(bench_engine PRIVATE strike_engine)
