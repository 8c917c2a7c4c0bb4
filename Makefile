# Makefile: the two set-up commands of the README, for a fresh Debian machine.
#   make demo   installs missing packages, builds, and runs the collector on
#               ResNet-18 (batch 1, 1 thread): tunes its tasks with a small
#               budget, then runs the model untuned, tuned and with oneDNN
#               kernels (about 10 minutes on 2 cores; records in demo.db)
#   make test   installs missing packages, builds with -Werror and runs every
#               test (the fuzz corpora replayed among them), then does the same in an
#               ASan+UBSan build
#   make fuzz   builds the libFuzzer targets (clang) in build-fuzz/ and runs
#               each for FUZZ_SECONDS (default 300), keeping what they find
# The real build is CMake; this file only strings the steps together.

CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
JOBS ?= 2
# one kernel cache for both test builds (content-addressed: see CMakeLists.txt)
TEST_KCACHE ?= $(CURDIR)/build-kcache
FUZZ_SECONDS ?= 300
DEMO_TRIALS ?= 16

.PHONY: all deps build demo test test-release test-asan fuzz clean

all: build

deps:
	./scripts/install-deps.sh

build:
	cmake -S . -B build $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS)

demo: deps
	$(MAKE) build
	./build/opbench tune --modelsource local --modelname resnet-18 --target llvm --batchsize 1 \
	  --threads 1 --tuner xgb --trials $(DEMO_TRIALS) --key-ops 95 --iftune true --ifcompare true --db demo.db

test: deps
	$(MAKE) test-release
	$(MAKE) test-asan

test-release:
	cmake -S . -B build $(CMAKE_FLAGS) -DOB_WERROR=ON -DOB_TEST_KCACHE=$(TEST_KCACHE)
	cmake --build build -j$(JOBS)
	ctest --test-dir build --output-on-failure -j2

test-asan:
	cmake -S . -B build-asan $(CMAKE_FLAGS) -DOB_SANITIZE=ON -DOB_WERROR=ON -DOB_TEST_KCACHE=$(TEST_KCACHE)
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j2

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) ./scripts/fuzz.sh

clean:
	rm -rf build build-asan build-fuzz build-kcache
