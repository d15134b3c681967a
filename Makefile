# The README's two commands. Both install missing Debian packages when run as root, then
# configure and build; `make run` runs the main job, `make test` runs ctest.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: run test deps configure build clean format format-check tidy sanitize tsan fuzz reliability-table ci ci-steps

deps:
	@tools/install_deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DMETRALE_WERROR=ON $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/tools/metrale-jit targets
	$(BUILD_DIR)/tools/metrale-jit build
	$(BUILD_DIR)/tools/metrale-jit selftest

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The whole unit suite under AddressSanitizer + UndefinedBehaviorSanitizer (any report fails:
# -fno-sanitize-recover), then the probe that shows ASan sees a host kernel reading past its input.
# tools/run_sanitized_units.sh retries once only on LeakSanitizer's own tracer crash at exit.
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMETRALE_WERROR=ON -DMETRALE_SANITIZE=address,undefined \
	  -DMETRALE_BUILD_TOOLS=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS) --target metrale_unit_tests metrale_host_asan_probe
	$(SANITIZER_ENV) tools/run_sanitized_units.sh build-asan/tests/metrale_unit_tests
	cd build-asan && ctest --output-on-failure -R '^host_asan_'

# The concurrency tests (tagged [concurrency]; their files only: tests/CMakeLists.txt) under
# ThreadSanitizer. `-w NoTests` makes an
# empty selection (a lost tag) a failure instead of a silent pass.
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMETRALE_WERROR=ON -DMETRALE_SANITIZE=thread \
	  -DMETRALE_BUILD_TOOLS=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS) --target metrale_concurrency_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0 build-tsan/tests/metrale_concurrency_tests -w NoTests "[concurrency]"

# libFuzzer targets, about 30 s each.
fuzz: deps
	tools/run_fuzzers.sh 30

# Every test RELIABILITY.md names exists (needs the builds of `make test` and `make sanitize`).
reliability-table:
	tools/check_reliability_table.sh $(BUILD_DIR) build-asan

# Everything CI runs after `make test` (.ci/run runs them one by one, timing each).
CI_STEPS = format-check sanitize tsan fuzz reliability-table
ci: $(CI_STEPS)
ci-steps:
	@echo $(CI_STEPS)

# tests/data/jit/jit_test_broken.cuh holds a syntax error on purpose (its line is asserted).
FORMAT_FILES = $$(git ls-files '*.h' '*.c' '*.hpp' '*.cpp' '*.cuh' | grep -v 'tests/data/jit/jit_test_broken.cuh')

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run -Werror $(FORMAT_FILES)

tidy: configure
	run-clang-tidy -p $(BUILD_DIR) -quiet $$(git ls-files 'src/*.cpp' 'tools/*.cpp')

clean:
	rm -rf $(BUILD_DIR)
