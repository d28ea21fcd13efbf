#!/usr/bin/python3
"""Plot tessera-bench --op conv JSON: GFLOP/s per layer, grouped bars for
Tessera (OHWI filter packed per call; filter packed once) and oneDNN
(weights prepacked in its own format, `onednn_any`), one panel per
(dtype, batch, layer set), one PNG per JSON file."""
import argparse
import collections
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

IMPLS = [("NHWC", "tessera", "tessera (OHWI, packed per call)"),
         ("NHWC-PACKED", "tessera", "tessera (packed once)"),
         ("NHWC", "onednn_any", "oneDNN (prepacked weights)")]


def natural_key(name):
    """'dw10' after 'dw9'; ResNet-50's names sort in network order."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json", help="tessera-bench --op conv --json output")
    ap.add_argument("png", help="the PNG to write")
    ap.add_argument("--title", default="", help="text added to the title (device, threads, date)")
    args = ap.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    # rate[(dtype, batch, kind)][layer][(layout, impl)] = gflops
    rate = collections.defaultdict(lambda: collections.defaultdict(dict))
    order = collections.defaultdict(list)
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        if parts[0] != "conv" or b.get("error_occurred") or "gflops" not in b:
            continue
        # with --benchmark_repetitions: each run, then Google Benchmark's
        # aggregates; the median (reported last) is the point plotted
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        _, dtype, layout, shape, impl = parts[:5]
        layer, batch = shape.rsplit("_n", 1)
        kind = "depthwise" if layer.startswith("dw") else "ResNet-50"
        key = (dtype, int(batch), kind)
        rate[key][layer][(layout, impl)] = b["gflops"]
        if layer not in order[key]:
            order[key].append(layer)
    keys = sorted(rate, key=lambda k: (k[2] != "ResNet-50", k[0], k[1]))
    fig, axes = plt.subplots(len(keys), 1, figsize=(14, 3.2 * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        layers = sorted(order[key], key=natural_key)  # run order is shuffled when interleaved
        width = 0.8 / len(IMPLS)
        for i, (layout, impl, label) in enumerate(IMPLS):
            ys = [rate[key][l].get((layout, impl), 0) for l in layers]
            ax.bar([x + (i - 1) * width for x in range(len(layers))], ys, width, label=label)
        ax.set_xticks(range(len(layers)))
        ax.set_xticklabels(layers, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"conv2d {key[2]} {key[0]} NHWC, batch {key[1]}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Tessera conv2d vs oneDNN {args.title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
