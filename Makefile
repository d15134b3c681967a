# The README's two commands. Both install missing Debian packages when run as root, then
# configure and build; `make run` runs the main job, `make test` runs ctest.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: run test deps configure build clean format tidy

deps:
	@tools/install_deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DMETRALE_WERROR=ON $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/tools/metrale-jit targets

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

format:
	clang-format -i $$(git ls-files '*.hpp' '*.cpp' '*.cuh')

tidy: configure
	run-clang-tidy -p $(BUILD_DIR) -quiet $$(git ls-files 'src/*.cpp' 'tools/*.cpp')

clean:
	rm -rf $(BUILD_DIR)
