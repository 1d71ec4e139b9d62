# Two commands on a fresh Debian 12 machine:
#   make run   — install what is missing, build, run the main job (the quickstart plan)
#   make test  — install what is missing, build, run every test
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2
CMAKE_ARGS ?=
PLAN ?= plans/quickstart.yaml
MAKEFLAGS += --no-print-directory

XPUPERF := $(BUILD_DIR)/src/xpuperf

.PHONY: all deps configure build run test format clean

all: build

deps:
	@scripts/install-deps.sh

# Configuring every time keeps the git hash in `xpuperf --version` current; it is quick.
configure: deps
	@mkdir -p $(BUILD_DIR)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >$(BUILD_DIR)/configure.log 2>&1 || \
	  { cat $(BUILD_DIR)/configure.log; exit 1; }
	@grep -- '^-- xpuperf' $(BUILD_DIR)/configure.log || true

build: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS)

# The main job: the quickstart plan (LeNet-5 on Fashion-MNIST on this machine's CPU).
run: build
	$(XPUPERF) run $(PLAN)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

format:
	@git ls-files '*.cpp' '*.h' '*.cu' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
