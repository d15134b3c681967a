# The README's two commands. Both install missing Debian packages when run as root, then
# configure and build; `make run` runs the main job, `make test` runs ctest.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: run test deps configure build clean format tidy sanitize tsan fuzz ci

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

# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMETRALE_WERROR=ON -DMETRALE_SANITIZE=address,undefined \
	  -DMETRALE_BUILD_TOOLS=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS) --target metrale_unit_tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/tests/metrale_unit_tests

# The concurrency tests (tagged [concurrency]) under ThreadSanitizer.
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMETRALE_WERROR=ON -DMETRALE_SANITIZE=thread \
	  -DMETRALE_BUILD_TOOLS=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS) --target metrale_unit_tests
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/metrale_unit_tests "[concurrency]"

# libFuzzer targets, about 30 s each.
fuzz: deps
	tools/run_fuzzers.sh 30

# Everything CI runs after `make test`.
ci: sanitize tsan fuzz

format:
	clang-format -i $$(git ls-files '*.hpp' '*.cpp' '*.cuh')

tidy: configure
	run-clang-tidy -p $(BUILD_DIR) -quiet $$(git ls-files 'src/*.cpp' 'tools/*.cpp')

clean:
	rm -rf $(BUILD_DIR)
