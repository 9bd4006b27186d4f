# strike's front door. The two commands a newcomer needs:
#   make run     install what is missing, build, start striked on the embedded default
#   make test    install what is missing, then every CI stage (README, "Tests"):
#                format check, the gcc tree of `make build` with -Werror, the
#                clang ASan+UBSan tree and every test, the engine and HTTP
#                tests once more under ThreadSanitizer. Tests of the label
#                `fixtures` read data of other projects (STRIKE_TESTDATA_DIR,
#                STRIKE_SPECS_DIR: ../shared beside the checkout by default);
#                without it they are not run, and the summary says so
# Also: make build, make deps, make format, make bench [QUICK=1], make fuzz,
# make bench-scale [SCALE_KEYS=N SCALE_SMALL=N SCALE_ROUNDS=N] (docs/SCALE.md), make clean, and one stage of make test: make test-format, test-gcc,
# test-asan, test-tsan.

BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
TEST_BUILD ?= build/asan
GCC_BUILD  ?= build/gcc
TSAN_BUILD ?= build/tsan
BENCH_BUILD ?= build/release
JOBS       ?= $(shell nproc)
ARGS       ?=
CTEST_ARGS ?=

# Each stage of `make test` prints its time; the summary is printed at the end.
STAGE      := scripts/stage.sh
STAGE_LOG  := $(BUILD)/make-test-stages.txt

ASAN_CMAKE := -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DSTRIKE_SANITIZE=ON -DSTRIKE_FUZZ=ON
TSAN_CMAKE := -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DSTRIKE_TSAN=ON \
              -DSTRIKE_SANITIZE=OFF -DSTRIKE_FUZZ=OFF

.PHONY: all deps build run test test-format test-gcc test-asan test-tsan format bench bench-scale fuzz clean
# One target at a time, also under make -j: the builds use -j$(JOBS) themselves.
.NOTPARALLEL:

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/bin/striked $(ARGS)

# The stages run one after the other and the first failure stops make test.
test:
	@mkdir -p $(BUILD) && rm -f $(STAGE_LOG)
	@STRIKE_STAGE_LOG=$(abspath $(STAGE_LOG)) $(STAGE) deps scripts/deps.sh
	@STRIKE_STAGE_LOG=$(abspath $(STAGE_LOG)) $(MAKE) --no-print-directory DEPS_DONE=1 \
	    test-format test-gcc test-asan test-tsan
	@if grep -q ' tests not run: ' $(STAGE_LOG); then \
	    echo "make test: every stage passed, but not every test ran (below)"; \
	else echo "make test: every stage passed"; fi; cat $(STAGE_LOG)

# deps runs once per make test; alone, each stage installs what is missing itself.
STAGE_DEPS := $(if $(DEPS_DONE),,deps)

# Every tracked C file against .clang-format (make format fixes them).
test-format: $(STAGE_DEPS)
	@$(STAGE) "format check" scripts/format.sh --check

# What users build with make build (gcc, $(BUILD_TYPE)), in a tree of its own,
# warnings as errors; tests are compiled, not run.
test-gcc: $(STAGE_DEPS)
	@$(STAGE) "gcc build" sh -c 'cmake -S . -B $(GCC_BUILD) -DCMAKE_C_COMPILER=gcc \
	    -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSTRIKE_WERROR=ON >/dev/null && \
	    cmake --build $(GCC_BUILD) -j$(JOBS)'

# clang, ASan+UBSan (LSan on), libFuzzer targets: every ctest test. The
# configure step names the `fixtures` tests it disabled (their data is absent)
# in $(TEST_BUILD)/fixtures-not-run.txt; the stage line carries that note.
test-asan: $(STAGE_DEPS)
	@$(STAGE) "asan build" sh -c 'cmake -S . -B $(TEST_BUILD) $(ASAN_CMAKE) >/dev/null && \
	    cmake --build $(TEST_BUILD) -j$(JOBS) && scripts/test-peers.sh $(TEST_BUILD)'
	@STRIKE_STAGE_NOTE=$(TEST_BUILD)/fixtures-not-run.txt $(STAGE) "asan ctest" \
	    ctest --test-dir $(TEST_BUILD) --output-on-failure -j2 $(CTEST_ARGS)

# clang, ThreadSanitizer: only the programs of the `tsan` label (the engine and
# HTTP tests), races reported against tests/tsan.supp.
test-tsan: $(STAGE_DEPS)
	@$(STAGE) "tsan build" sh -c 'cmake -S . -B $(TSAN_BUILD) $(TSAN_CMAKE) >/dev/null && \
	    cmake --build $(TSAN_BUILD) -j$(JOBS) --target tsan_tests && \
	    scripts/test-peers.sh $(TSAN_BUILD)'
	@$(STAGE) "tsan ctest" ctest --test-dir $(TSAN_BUILD) --output-on-failure -j2 -L tsan \
	    $(CTEST_ARGS)

format:
	@scripts/format.sh

bench:
	@scripts/deps.sh
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS)
	@scripts/test-peers.sh $(BENCH_BUILD)
	tests/bench/run.sh $(BENCH_BUILD) $(if $(QUICK),--quick,)

# The commit path at 1M and at 100M keys (docs/SCALE.md): outside `make bench`, its loads alone
# take 10-25 minutes at the default size.
SCALE_KEYS   ?= 100000000
SCALE_SMALL  ?= 1000000
SCALE_ROUNDS ?= 3
bench-scale:
	@scripts/deps.sh
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS) --target bench_engine
	tests/bench/scale.py $(BENCH_BUILD) --small $(SCALE_SMALL) --big $(SCALE_KEYS) --rounds $(SCALE_ROUNDS)

fuzz: deps
	@cmake -S . -B $(TEST_BUILD) $(ASAN_CMAKE) >/dev/null
	@cmake --build $(TEST_BUILD) -j$(JOBS)
	tests/fuzz/run.sh $(TEST_BUILD) 1800 1000000

clean:
	rm -rf $(BUILD)
