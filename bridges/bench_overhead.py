#!/usr/bin/python3
"""Per-call overhead of the Python and PyTorch bridges: microseconds per
call on tiny shapes, where the kernel's own work is negligible and what is
left is the bridge (argument checks, descriptors, ctypes, torch.library
dispatch, allocating the output). A measurement tool, not a test: nothing
is asserted.

Usage: /usr/bin/python3 bridges/bench_overhead.py [--calls N] [--rounds R]
       [--threads T] [--json PATH]

Run it with Debian's /usr/bin/python3 (NumPy, PyTorch) from the repository,
with TESSERA_LIBRARY pointing at the library to measure (else the package's
search: ../../build, ...). Each figure is the best of R rounds of N calls
(default 5 x 20000), in µs per call. The Tessera context uses T threads
(default 1; 0 = all cores, the default context's setting); the torch
baselines run with torch.set_num_threads(T, or the core count for 0). --json PATH writes the
table and the conditions (a file, or a directory: overhead-<date>.json).
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))


def per_call(f, calls, rounds):
    for _ in range(min(calls, 1000)):
        f()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def numpy_rows(tessera, L, np, calls, rounds):
    a = np.ones((2, 2), np.float32)
    x = np.ones((2, 8), np.float32)
    g = np.ones(8, np.float32)
    d = L.GemmDesc()
    L.lib.tsr_gemm_desc_init(ctypes.byref(d))
    d.m = d.n = d.k = 2
    out = np.empty((2, 2), np.float32)
    h, da, pa, po = tessera.default_context().handle, ctypes.addressof(d), a.ctypes.data, out.ctypes.data
    f = L.lib.tsr_gemm
    rows = [
        ("numpy", "tessera.gemm 2x2x2 f32", lambda: tessera.gemm(a, a)),
        ("numpy", "tsr_gemm via ctypes, prebuilt descriptor (the floor)", lambda: f(h, da, pa, pa, po)),
        ("numpy", "empty ctypes call (tsr_version)", L.lib.tsr_version),
        ("numpy", "numpy a @ a 2x2x2 (baseline)", lambda: a @ a),
        ("numpy", "tessera.gemm 2x2x2 + bias + relu", lambda: tessera.gemm(a, a, bias=a[0], activation="relu")),
        ("numpy", "tessera.softmax 2x8", lambda: tessera.softmax(x)),
        ("numpy", "tessera.layer_norm 2x8", lambda: tessera.layer_norm(x, g, g)),
        ("numpy", "tessera.chain(x).add(1).relu() 2x8", lambda: tessera.chain(x).add(1.0).relu().run()),
    ]
    return [(grp, name, per_call(fn, calls, rounds)) for grp, name, fn in rows]


def torch_rows(torch, calls, rounds):
    import torch.nn.functional as F
    import tessera.torch as tt
    x = torch.ones(2, 2)
    w = torch.ones(2, 2)
    b = torch.ones(2)
    xn = torch.ones(2, 8)
    g = torch.ones(8)
    img = torch.ones(1, 2, 4, 4)
    wc = torch.ones(2, 2, 3, 3)
    q = torch.ones(1, 1, 2, 4)
    rows = [
        ("torch", "tessera.torch.linear 2x2 + bias", lambda: tt.linear(x, w, b)),
        ("torch", "torch.ops.tessera.linear 2x2 + bias (dispatcher)", lambda: torch.ops.tessera.linear(x, w, b, "none")),
        ("torch", "F.linear 2x2 + bias (baseline)", lambda: F.linear(x, w, b)),
        ("torch", "tessera.torch.layer_norm 2x8", lambda: tt.layer_norm(xn, (8,), g, g)),
        ("torch", "F.layer_norm 2x8 (baseline)", lambda: F.layer_norm(xn, (8,), g, g)),
        ("torch", "tessera.torch.conv2d 1x2x4x4, 3x3", lambda: tt.conv2d(img, wc, padding=1)),
        ("torch", "F.conv2d 1x2x4x4, 3x3 (baseline)", lambda: F.conv2d(img, wc, padding=1)),
        ("torch", "tessera.torch.scaled_dot_product_attention 1x1x2x4",
         lambda: tt.scaled_dot_product_attention(q, q, q)),
    ]
    if hasattr(F, "scaled_dot_product_attention"):
        rows.append(("torch", "F.scaled_dot_product_attention 1x1x2x4 (baseline)",
                     lambda: F.scaled_dot_product_attention(q, q, q)))
    with torch.no_grad():
        return [(grp, name, per_call(fn, calls, rounds)) for grp, name, fn in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    import numpy as np
    import tessera
    from tessera import _lib as L
    tessera.set_default_context(tessera.Context("cpu", threads=args.threads))
    results = numpy_rows(tessera, L, np, args.calls, args.rounds)
    versions = {"python": sys.version.split()[0], "numpy": np.__version__, "tessera": tessera.version()}
    try:
        import torch
    except ImportError:
        torch = None
        print("(no torch for this interpreter: the PyTorch rows are skipped)")
    if torch is not None:
        torch.set_num_threads(args.threads or os.cpu_count())
        versions["torch"] = torch.__version__
        results += torch_rows(torch, args.calls, args.rounds)
    cpu = tessera.default_context().info()["device_name"]
    print(f"per-call cost in µs, best of {args.rounds} x {args.calls} calls, "
          f"{args.threads or 'all'} thread(s), {cpu}, "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    for grp, name, us in results:
        print(f"  {us:8.2f}  {name}")
    if args.json:
        out = args.json
        if os.path.isdir(out):
            out = os.path.join(out, f"overhead-{time.strftime('%Y-%m-%d')}.json")
        commit = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or None
        with open(out, "w") as f:
            json.dump({"tool": "bridges/bench_overhead.py", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "commit": commit, "conditions": os.environ.get("BENCH_CONDITIONS", ""),
                       "cpu": cpu, "cpus": os.cpu_count(), "threads": args.threads, "calls": args.calls,
                       "rounds": args.rounds, "library": tessera.library_path, "versions": versions,
                       "results": [{"group": g, "name": n, "us_per_call": u} for g, n, u in results]},
                      f, indent=1)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
