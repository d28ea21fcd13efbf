"""Side-by-side timing of NumPy float32 matmul with and without
libtessera_blas preloaded. A measurement tool, not a test: nothing is
asserted about speed.

Usage: /usr/bin/python3 bridges/blas/bench_numpy.py BUILD/bridges/blas/libtessera_blas.so
       [--min-time SECONDS] [--rounds N] [--json PATH] [--quick]

Shapes: square 512, 1024, 2048, 4096 and the issue's skinny set, M = 1, 2, 4,
8, 16 with N = K = 4096 (--quick: tiny shapes, to check that the script
works; its figures mean nothing). --json PATH writes the table, the machine
and the versions as JSON: PATH is a file, or a directory (a results folder)
that gets numpy-blas-<date>.json.

Each side runs in its own process, one after the other (never at the same
time: they would share the cores), alternating for --rounds rounds (default
3) so that a burst of load elsewhere on the machine hits both sides. For each
shape: a warm-up, then repetitions until --min-time has passed (at least
3); the median time gives GFLOP/s = 2 m n k / t, and the best round is kept. A third process with TESSERA_BLAS_VERBOSE=1 runs each
shape once to show which path the preloaded call took.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [  # (m, k, n): C (m x n) = A (m x k) @ B (k x n); the targets
    (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
    (1, 4096, 4096), (2, 4096, 4096), (4, 4096, 4096), (8, 4096, 4096), (16, 4096, 4096),
]
QUICK = [(64, 64, 64), (128, 128, 128), (1, 256, 256), (16, 256, 256)]
TARGET = {"square": 1.0, "skinny": 1.5}  # the ratios: >= 1.0x square, >= 1.5x at M <= 16


def shape_class(m, k, n):
    return "skinny" if m <= 16 else "square"


def measure(min_time, shapes):
    import numpy as np
    rng = np.random.default_rng(0)
    out = []
    for m, k, n in shapes:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        a @ b  # warm-up: threads, page faults, the context
        times, start = [], time.perf_counter()
        while len(times) < 3 or time.perf_counter() - start < min_time:
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        out.append({"shape": [m, k, n], "seconds": t, "gflops": 2.0 * m * n * k / t / 1e9, "reps": len(times)})
    return out


def child(args, env):
    return subprocess.run([sys.executable, os.path.abspath(__file__)] + args, env=env,
                          capture_output=True, text=True, check=True)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("library", help="the built libtessera_blas.so")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds of repetitions per shape (1.0)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per side, best kept (3)")
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON (a file, or a directory)")
    ap.add_argument("--quick", action="store_true", help="tiny shapes: checks the script, not the speed")
    return ap.parse_args(argv)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        shapes = QUICK if sys.argv[3] == "quick" else SHAPES
        print(json.dumps(measure(float(sys.argv[2]), shapes)))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "--paths":
        import numpy as np
        for m, k, n in (QUICK if sys.argv[2] == "quick" else SHAPES):
            sys.stderr.write(f"SHAPE {m}x{k}x{n}\n")
            sys.stderr.flush()
            np.ones((m, k), np.float32) @ np.ones((k, n), np.float32)
        return 0
    args = parse(sys.argv[1:])
    lib = os.path.abspath(args.library)
    if not os.path.exists(lib):
        print(f"bench_numpy: {lib}: no such file", file=sys.stderr)
        return 2
    which = "quick" if args.quick else "full"
    min_time = 0.02 if args.quick and args.min_time == 1.0 else args.min_time
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TESSERA_BLAS_VERBOSE",
                                                              "TESSERA_BLAS_DISABLE")}
    plain, pre = None, None

    def best(old, new):
        return new if old is None else [o if o["gflops"] >= n["gflops"] else n for o, n in zip(old, new)]

    for _ in range(args.rounds):
        plain = best(plain, json.loads(child(["--child", str(min_time), which], base).stdout))
        pre = best(pre, json.loads(child(["--child", str(min_time), which], dict(base, LD_PRELOAD=lib)).stdout))
    paths = child(["--paths", which], dict(base, LD_PRELOAD=lib, TESSERA_BLAS_VERBOSE="1")).stderr
    path_of, cur = {}, None
    for line in paths.splitlines():
        if line.startswith("SHAPE "):
            cur = line.split()[1]
            path_of[cur] = "no sgemm (NumPy used another BLAS call)"
        elif cur and line.startswith("tessera_blas:"):
            path_of[cur] = line.split("-> ", 1)[1]

    import numpy as np
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs ({cpu_name()}); per shape the median of >= 3 "
          f"runs (>= {min_time}s), best of {args.rounds} rounds" + ("; --quick: not a measurement" if args.quick
                                                                   else ""))
    print(f"{'m x k x n':>18} {'system BLAS':>12} {'Tessera':>10} {'ratio':>6} {'target':>7}  path with the preload")
    rows = []
    for p, q in zip(plain, pre):
        m, k, n = p["shape"]
        key = f"{m}x{k}x{n}"
        ratio = q["gflops"] / p["gflops"]
        target = TARGET[shape_class(m, k, n)]
        print(f"{key:>18} {p['gflops']:9.1f} GF {q['gflops']:7.1f} GF {ratio:6.2f} {target:6.1f}x  "
              f"{path_of.get(key, '?')}")
        rows.append({"m": m, "k": k, "n": n, "class": shape_class(m, k, n), "system_gflops": p["gflops"],
                     "tessera_gflops": q["gflops"], "ratio": ratio, "target_ratio": target,
                     "system_seconds": p["seconds"], "tessera_seconds": q["seconds"],
                     "path": path_of.get(key, "?")})
    if args.json:
        out = args.json
        if os.path.isdir(out):
            out = os.path.join(out, f"numpy-blas-{time.strftime('%Y-%m-%d')}.json")
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        with open(out, "w") as f:
            json.dump({"tool": "bridges/blas/bench_numpy.py", "quick": args.quick,
                       "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit or None,
                       "cpu": cpu_name(), "cpus": os.cpu_count(), "numpy": np.__version__,
                       "python": sys.version.split()[0], "library": lib, "min_time": min_time,
                       "rounds": args.rounds, "results": rows}, f, indent=1)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
