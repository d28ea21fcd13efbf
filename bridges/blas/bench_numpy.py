"""Side-by-side timing of NumPy float32 matmul with and without
libtessera_blas preloaded. A measurement tool, not a test: nothing is
asserted about speed.

Usage: /usr/bin/python3 bridges/blas/bench_numpy.py BUILD/bridges/blas/libtessera_blas.so
       [--min-time SECONDS] [--rounds N]

Each side runs in its own process, one after the other (never at the same
time: they would share the cores), alternating for --rounds rounds (default
3) so that a burst of load elsewhere on the machine hits both sides. For each
shape: a warm-up, then repetitions until --min-time has passed (at least
3); the median time gives GFLOP/s = 2 m n k / t, and the best round is kept. A third process with TESSERA_BLAS_VERBOSE=1 runs each
shape once to show which path the preloaded call took.
"""
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [  # (m, k, n): C (m x n) = A (m x k) @ B (k x n)
    (512, 512, 512), (1024, 1024, 1024), (1536, 1536, 1536), (2048, 2048, 2048),
    (16, 4096, 4096), (8, 4096, 4096), (4, 4096, 4096), (16, 2048, 8192), (1, 4096, 4096),
]


def measure(min_time):
    import numpy as np
    rng = np.random.default_rng(0)
    out = []
    for m, k, n in SHAPES:
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
    r = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, env=env,
                       capture_output=True, text=True, check=True)
    return r


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        print(json.dumps(measure(float(sys.argv[2]))))
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "--paths":
        import numpy as np
        for m, k, n in SHAPES:
            sys.stderr.write(f"SHAPE {m}x{k}x{n}\n")
            sys.stderr.flush()
            np.ones((m, k), np.float32) @ np.ones((k, n), np.float32)
        return 0
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    lib = os.path.abspath(sys.argv[1])
    opts = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    min_time, rounds = float(opts.get("--min-time", 1.0)), int(opts.get("--rounds", 3))
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TESSERA_BLAS_VERBOSE",
                                                              "TESSERA_BLAS_DISABLE")}
    plain, pre = None, None

    def best(old, new):
        return new if old is None else [o if o["gflops"] >= n["gflops"] else n for o, n in zip(old, new)]

    for _ in range(rounds):
        plain = best(plain, json.loads(child(["--child", str(min_time)], base).stdout))
        pre = best(pre, json.loads(child(["--child", str(min_time)], dict(base, LD_PRELOAD=lib)).stdout))
    paths = child(["--paths"], dict(base, LD_PRELOAD=lib, TESSERA_BLAS_VERBOSE="1")).stderr
    path_of, cur = {}, None
    for line in paths.splitlines():
        if line.startswith("SHAPE "):
            cur = line.split()[1]
            path_of[cur] = "no sgemm (NumPy used another BLAS call)"
        elif cur and line.startswith("tessera_blas:"):
            path_of[cur] = line.split("-> ", 1)[1]

    import numpy as np
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs; per shape the median of >= 3 runs "
          f"(>= {min_time}s), best of {rounds} rounds")
    print(f"{'m x k x n':>18} {'system BLAS':>12} {'Tessera':>10} {'ratio':>6}  path with the preload")
    for p, q in zip(plain, pre):
        m, k, n = p["shape"]
        key = f"{m}x{k}x{n}"
        print(f"{key:>18} {p['gflops']:9.1f} GF {q['gflops']:7.1f} GF {q['gflops'] / p['gflops']:6.2f}  "
              f"{path_of.get(key, '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
