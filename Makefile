# strike's front door. The two commands a newcomer needs:
#   make run     install what is missing, build, start striked on the embedded default
#   make test    install what is missing, build with ASan+UBSan, run every test
# Also: make build, make deps, make bench [QUICK=1], make fuzz, make clean.

BUILD      ?= build
TEST_BUILD ?= build/asan
BENCH_BUILD ?= build/release
JOBS       ?= $(shell nproc)
ARGS       ?=
CTEST_ARGS ?=

.PHONY: all deps build run test bench fuzz clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/bin/striked $(ARGS)

test: deps
	@cmake -S . -B $(TEST_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	    -DSTRIKE_SANITIZE=ON -DSTRIKE_FUZZ=ON >/dev/null
	@cmake --build $(TEST_BUILD) -j$(JOBS)
	@scripts/test-peers.sh $(TEST_BUILD)
	cd $(TEST_BUILD) && ctest --output-on-failure -j2 $(CTEST_ARGS)

bench:
	@scripts/deps.sh
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS)
	@scripts/test-peers.sh $(BENCH_BUILD)
	tests/bench/run.sh $(BENCH_BUILD) $(if $(QUICK),--quick,)

fuzz: deps
	@cmake -S . -B $(TEST_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	    -DSTRIKE_SANITIZE=ON -DSTRIKE_FUZZ=ON >/dev/null
	@cmake --build $(TEST_BUILD) -j$(JOBS)
	tests/fuzz/run.sh $(TEST_BUILD) 60

clean:
	rm -rf $(BUILD)
