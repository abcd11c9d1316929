# tandem - the two commands of the README, and a few more.
#   make demo       install what is missing, build, run the main job on a bundled data set
#   make test       install what is missing, build, run every test
#   make bench      benchmark on the Silesia corpus (../shared/corpus or $TANDEM_CORPUS)
#   make fuzz       build the libFuzzer targets with clang and run each for FUZZ_SECONDS
#   make gpu-check  build for sm_90, run the GPU tests and GPU benchmarks (on a GPU machine)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
GPU_BUILD ?= build-gpu
GPU_LOGS ?= gpu-logs

.PHONY: all deps configure build demo test bench fuzz gpu-check sanitize clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: deps
	@$(MAKE) --no-print-directory build
	@scripts/demo $(BUILD)

test: deps
	@$(MAKE) --no-print-directory build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 1800

bench: build
	TANDEM_BUILD=$(BUILD) scripts/bench-corpus

fuzz: deps
	scripts/fuzz

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=ON -DTANDEM_CUDA=OFF
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS) -LE slow

# For the GPU machine: no installs (it has no network), sm_90, logs in $(GPU_LOGS).
gpu-check:
	@scripts/gpu-check $(GPU_BUILD) $(GPU_LOGS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz $(GPU_BUILD)
