# Two commands on a fresh Debian 12 machine:
#   make run   — install what the build needs, build the xpuperf binary only (on a fresh clone
#                with the quickstart's cases only), run the main job (the quickstart plan)
#   make test  — install what the tests need too, build everything, run every test
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= 2
CMAKE_ARGS ?=
PLAN ?= plans/quickstart.yaml
MAKEFLAGS += --no-print-directory

XPUPERF := $(BUILD_DIR)/src/xpuperf

.PHONY: all deps deps-run configure configure-run build run-build run test language-data cpm-data format clean

all: build

deps-run:
	@scripts/install-deps.sh run

deps:
	@scripts/install-deps.sh test

# A fresh build folder compiles with clang++ where it is installed (the installer installs it):
# CMake then builds LibTorch's precompiled header with its templates instantiated once
# (-fpch-instantiate-templates), and a LibTorch file compiles in about a third of GCC 12's time
# (docs/DEVELOPING.md, Build time). `make CXX=g++ ...` on a fresh folder keeps GCC; a configured folder keeps
# the compiler it has.
# The choice is made when the recipe runs, after the installer: on a bare machine clang++ is not
# there yet when make reads this file, and the first build then took GCC (515 s for `make run`).
ifeq ($(origin CXX),default)
  CXX_CHOICE = $$(command -v clang++ 2>/dev/null || echo c++)
else
  CXX_CHOICE = $(CXX)
endif

# Configuring every time keeps the git hash in `xpuperf --version` current; it is quick.
# $(1): the cases to build (XPUPERF_CASES), or nothing to keep the build folder's choice.
define configure_build
	@mkdir -p $(BUILD_DIR)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(if $(1),-DXPUPERF_CASES=$(1)) \
	  $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,-DCMAKE_CXX_COMPILER=$(CXX_CHOICE)) $(CMAKE_ARGS) \
	  >$(BUILD_DIR)/configure.log 2>&1 || { cat $(BUILD_DIR)/configure.log; exit 1; }
	@grep -- '^-- xpuperf' $(BUILD_DIR)/configure.log || true
endef

# A fresh build folder builds the quickstart's cases first (LeNet-5 and the base cases: minutes
# sooner on a small machine); one that has every case keeps them.
configure-run: deps-run
	$(call configure_build,$(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,quickstart))

configure: deps
	$(call configure_build,all)

# What the main job needs: the xpuperf binary, not the tests.
run-build: configure-run
	@echo "Building xpuperf (CMake shows its progress; docs/DEVELOPING.md, Build time: how long on 2 cores)"
	@scripts/build.sh $(BUILD_DIR) $(JOBS) xpuperf

# scripts/build.sh: builds, and builds the precompiled header again where a package upgrade left it stale.
build: configure
	@scripts/build.sh $(BUILD_DIR) $(JOBS)

# The main job: the quickstart plan (hardware figures, then LeNet-5 on Fashion-MNIST on this
# machine's CPU); `xpuperf run` ends with where report.html is.
run: run-build
	$(XPUPERF) run $(PLAN)

# The language cases' token datasets (the kernel's documentation, tokenised: a few seconds), where
# plans/nvidia-language.yaml and the tests read them; and Chinese text with a SentencePiece model
# trained on it (about 25 s) for the sentencepiece tokeniser.
language-data: build
	@scripts/linux-doc-datasets.sh data/text /usr/share/doc/linux-doc-6.1/Documentation $(XPUPERF)
	@scripts/chinese-text.sh data/text/zh-debian

# CPM's token dataset (the cpm case's train_data): the same Chinese text under a SentencePiece
# vocabulary of CPM-1's 30,000 pieces (about 90 s to train), its pages as documents.
cpm-data: build
	@scripts/chinese-text.sh data/text/zh-cpm 30000
	$(XPUPERF) data tokenize --tokenizer sentencepiece --model data/text/zh-cpm/zh.model \
	  data/text/zh-cpm/documents.jsonl -o data/text/zh-debian-cpm

test: build language-data
	cd $(BUILD_DIR) && ctest --output-on-failure --no-tests=error -j$(JOBS)

format:
	@git ls-files '*.cpp' '*.h' '*.cu' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
