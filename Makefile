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

# The main job: build, then benchmark Tessera against the vendor libraries on
# this machine (tuning joins when tessera-tune lands). BENCH_ARGS overrides.
BENCH_ARGS ?= --summary
run: build
	$(BUILD)/examples/gemm_example
	$(BUILD)/bench/tessera-bench $(BENCH_ARGS)

test: build
	meson test -C $(BUILD) --print-errorlogs -v

clean:
	rm -rf $(BUILD)
