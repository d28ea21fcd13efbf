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

# The main job. Today: build, then run the example on this machine's best
# CPU kernels. (Tuning and the vendor benchmarks join as their issues land.)
run: build
	@echo "== tessera on this machine"
	$(BUILD)/examples/gemm_example

test: build
	meson test -C $(BUILD) --print-errorlogs -v

clean:
	rm -rf $(BUILD)
