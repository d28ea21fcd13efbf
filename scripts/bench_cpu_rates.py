#!/usr/bin/env python3
"""Ratio table from a tessera-bench JSON with rates over CPU time.

On a shared machine a 1-thread run loses wall time to the other work, and
Google Benchmark's rate counters (gflops, gbps) are over wall time. This
rescales each repetition's counters by real_time / cpu_time (the timing
thread's CPU time: every op's work when it ran on 1 thread, so only use it
for --threads 1 runs) and keeps the best repetition of each case.

  scripts/bench_cpu_rates.py attention_1t.json [--wall]

Pairs: <case>/tessera with <case>/unfused (attention) or <case>/onednn (row
ops); copy and memcpy rows are printed as the bandwidth reference. Memory-
bound cases still share the memory system with the other work.
"""

import json
import sys


def best_rates(path, wall):
    best = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        name = (b.get("run_name") or b["name"]).replace("/real_time", "")
        f = 1.0 if wall else b["real_time"] / b["cpu_time"]
        rate = ((b.get("gflops") or 0) * f, (b.get("gbps") or 0) * f)
        best[name] = max(best.get(name, (0, 0)), rate)
    return best


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    wall = "--wall" in sys.argv
    best = best_rates(sys.argv[1], wall)
    print(f"best of repetitions, rates over {'wall' if wall else 'CPU'} time")
    print(f"{'case':58s} {'tessera':>9s} {'other':>9s} {'ratio':>7s}  unit")
    for name, (gf, gb) in best.items():
        if "/memcpy" in name or name.startswith("copy/"):
            print(f"{name:58s} {gb:9.1f} {'':9s} {'':7s}  GB/s")
            continue
        if not name.endswith("/tessera"):
            continue
        base = name[: -len("/tessera")]
        other = best.get(base + "/unfused") or best.get(base + "/onednn")
        col, unit = (1, "GB/s") if gb > 0 else (0, "GFLOP/s")
        ours = (gf, gb)[col]
        if other and other[col] > 0:
            print(f"{base:58s} {ours:9.1f} {other[col]:9.1f} {ours / other[col]:6.2f}x  {unit}")
        else:
            print(f"{base:58s} {ours:9.1f} {'-':>9s} {'-':>7s}  {unit}")


if __name__ == "__main__":
    main()
