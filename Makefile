# A thin wrapper over meson: `make run` (the main job) and `make test`.
BUILD ?= build
MESON_ARGS ?=

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
run: build
	$(BUILD)/examples/gemm_example
	$(BUILD)/autotune/cli/tessera-tune $(TUNE_ARGS)
	$(BUILD)/bench/tessera-bench $(BENCH_ARGS)

test: build
	meson test -C $(BUILD) --print-errorlogs -v

clean:
	rm -rf $(BUILD)
