# A thin wrapper over meson: `make run` (the main job) and `make test`.
BUILD ?= build
MESON_ARGS ?=
# The CUDA toolkit's usual home, for meson to find nvcc (-Dcuda=auto).
ifneq ($(wildcard /usr/local/cuda/bin/nvcc),)
export PATH := $(PATH):/usr/local/cuda/bin
endif

.PHONY: deps build run test clean

deps:
	@bash scripts/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_ARGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The main job: build, tune this machine (quick; the table goes to the user
# cache, see autotune/README.md), then benchmark Tessera against the vendor
# libraries. TUNE_ARGS / BENCH_ARGS override.
TUNE_ARGS ?= --quick
BENCH_ARGS ?= --summary
# With a GPU (and a CUDA build) the same again on it: f16 tuning, then
# tessera-bench --backend cuda against cuBLAS; without one, a SKIP line.
run: build
	$(BUILD)/examples/gemm_example
	$(BUILD)/autotune/cli/tessera-tune $(TUNE_ARGS)
	$(BUILD)/bench/tessera-bench $(BENCH_ARGS)
	@if $(BUILD)/autotune/cli/tessera-tune --backend cuda --show >/dev/null 2>&1; then \
	  set -x; $(BUILD)/autotune/cli/tessera-tune --backend cuda --dtype f16 $(TUNE_ARGS) && \
	  $(BUILD)/bench/tessera-bench --backend cuda $(BENCH_ARGS); \
	else echo "SKIP cuda: $$($(BUILD)/autotune/cli/tessera-tune --backend cuda --show 2>&1 | head -n 1)"; fi

test: build
	meson test -C $(BUILD) --print-errorlogs -v

clean:
	rm -rf $(BUILD)
