# Makefile: the two set-up commands of the README, for a fresh Debian machine.
#   make demo   installs missing packages, builds, measures ResNet-18's conv2d
#               workloads at their default configs (1 thread)
#   make test   installs missing packages, builds with -Werror and runs every
#               test, then does the same in an ASan+UBSan build
# The real build is CMake; this file only strings the steps together.

CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
JOBS ?= 2

FUZZ_SECONDS ?= 60

.PHONY: all deps build demo test test-release test-asan fuzz-onnx clean

all: build

deps:
	./scripts/install-deps.sh

build:
	cmake -S . -B build $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS)

demo: deps
	$(MAKE) build
	./build/opbench bench --suite resnet18 --threads 1

test: deps
	$(MAKE) test-release
	$(MAKE) test-asan

test-release:
	cmake -S . -B build $(CMAKE_FLAGS) -DOB_WERROR=ON
	cmake --build build -j$(JOBS)
	ctest --test-dir build --output-on-failure -j2

test-asan:
	cmake -S . -B build-asan $(CMAKE_FLAGS) -DOB_SANITIZE=ON -DOB_WERROR=ON
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j2

# libFuzzer on the ONNX importer for FUZZ_SECONDS (clang needed): new inputs
# go to build-fuzz/corpus-onnx, crashes to build-fuzz/crash-*; copy those
# into fuzz/corpus/onnx/ so that test_graph_onnx replays them.
fuzz-onnx:
	@command -v clang >/dev/null || { echo "fuzz-onnx: clang is needed (apt-get install clang)"; exit 1; }
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DOB_FUZZ=ON $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target fuzz_onnx
	mkdir -p build-fuzz/corpus-onnx
	cd build-fuzz && ./fuzz_onnx -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -rss_limit_mb=2048 \
	  -timeout=10 corpus-onnx ../fuzz/corpus/onnx

clean:
	rm -rf build build-asan build-fuzz
