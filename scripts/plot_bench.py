#!/usr/bin/python3
"""Plot tessera-bench JSON (Google Benchmark format): GFLOP/s per shape, one
line per implementation, one PNG per (op, dtype, layout family)."""
import argparse
import collections
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def shape_key(label):
    """'NT 16x4096x4096' -> ('NT', 16, 4096, 4096): layouts apart, then by m, n, k."""
    layout, _, shape = label.partition(" ")
    dims = shape.split("x")
    return (layout, *(int(x) for x in dims)) if all(x.isdigit() for x in dims) else (layout, shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("json", help="tessera-bench --json output")
    ap.add_argument("outdir", help="folder for the PNG files")
    ap.add_argument("--title", default="", help="text added to each title (device, date)")
    args = ap.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    # series[(op, dtype)][impl] = [(shape, gflops)], in run order
    series = collections.defaultdict(lambda: collections.defaultdict(list))
    order = collections.defaultdict(list)
    for b in data["benchmarks"]:
        if b.get("error_occurred") or "gflops" not in b:
            continue
        # with --benchmark_repetitions: each run, then Google Benchmark's
        # aggregates; the median (reported last) is the point plotted
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = b["name"].split("/")
        if len(parts) < 5 or parts[0] == "peak":
            continue
        op, dtype, layout, shape, impl = parts[:5]
        key = (op, dtype)
        label = layout + " " + shape
        series[key][impl].append((label, b["gflops"]))
        if label not in order[key]:
            order[key].append(label)
    os.makedirs(args.outdir, exist_ok=True)
    for (op, dtype), impls in series.items():
        labels = sorted(order[(op, dtype)], key=shape_key)  # run order is shuffled when interleaved
        fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(labels)), 4.5))
        for impl, points in impls.items():
            d = dict(points)
            ax.plot(range(len(labels)), [d.get(l, float("nan")) for l in labels], marker="o", label=impl)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"{op} {dtype} {args.title}".strip())
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = os.path.join(args.outdir, f"{op}_{dtype}.png")
        fig.savefig(path, dpi=110)
        print(path)


if __name__ == "__main__":
    main()
