"""libtessera_blas under NumPy: LD_PRELOAD in front of the system BLAS.

Usage: blas_numpy.py PATH/TO/libtessera_blas.so   (run with /usr/bin/python3)

This process, without the preload, computes float32 products with the
system BLAS; a child started with LD_PRELOAD computes the same ones through
the bridge. They must agree (to float32 rounding, against a float64
product), and the child's TESSERA_BLAS_VERBOSE lines must show that each
BLAS-backed product ran in Tessera. Exit 77 (meson: skipped) when this
Python has no NumPy.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print(f"SKIP blas_numpy: {sys.executable} has no numpy ({e})")
    sys.exit(77)

MARK = "BLAS_NUMPY_CASE"


def operands():
    """(name, x, y, via_blas): via_blas says NumPy hands it to cblas_sgemm
    (2-D operands whose strides BLAS can describe, possibly transposed);
    the others go through NumPy's own loops and only have to agree."""
    rng = np.random.default_rng(20240611)

    def r(*shape):
        return rng.uniform(-1, 1, size=shape).astype(np.float32)

    cases = []
    for m, k, n in [(2, 3, 4), (7, 13, 17), (16, 16, 16), (33, 65, 31), (97, 61, 41),
                    (128, 256, 96), (300, 200, 250), (5, 300, 130)]:
        cases.append((f"matmul {m}x{k}@{k}x{n}", r(m, k), r(k, n), True))
    cases.append(("A.T @ B", r(37, 29).T, r(37, 23), True))
    cases.append(("A @ B.T", r(29, 37), r(23, 37).T, True))
    cases.append(("A.T @ B.T", r(45, 19).T, r(27, 45).T, True))
    cases.append(("lda > m: A[:, :40] @ B", r(33, 64)[:, :40], r(40, 21), True))
    cases.append(("every other row, A[::2] @ B", r(50, 20)[::2], r(20, 11), False))
    cases.append(("every other column, A[:, ::2] @ B", r(20, 50)[:, ::2], r(25, 11), False))
    cases.append(("batched 4x(9x10 @ 10x12)", r(4, 9, 10), r(4, 10, 12), True))
    return cases


def compute(out_path):
    """The child: every product, each preceded by a marker on stderr so that
    the bridge's lines can be attributed to it."""
    results = {}
    for i, (name, x, y, _) in enumerate(operands()):
        sys.stderr.write(f"{MARK} {i}\n")
        sys.stderr.flush()
        results[f"c{i}"] = x @ y
        results[f"d{i}"] = np.dot(x, y) if x.ndim == 2 else x @ y
    sys.stderr.write(f"{MARK} end\n")
    sys.stderr.flush()
    np.savez(out_path, **results)


def lines_per_case(stderr, n):
    per = {i: [] for i in range(n)}
    cur = None
    for line in stderr.splitlines():
        if line.startswith(MARK):
            tag = line.split()[1]
            cur = None if tag == "end" else int(tag)
        elif cur is not None and line.startswith("tessera_blas:"):
            per[cur].append(line)
    return per


def sanitizer_preload(lib):
    """(extra LD_PRELOAD entries, ASAN_OPTIONS) for a library built with
    -fsanitize=address (the CI's sanitizer build): Python is not
    instrumented, so the ASan runtime must be preloaded ahead of it, and
    LeakSanitizer would report the interpreter's own allocations at exit.
    None when the runtime cannot be found (clang links it into executables
    only), which skips the test."""
    try:
        out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    except OSError:
        return [], None
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libasan.so") and len(parts) >= 3 and parts[2].startswith("/"):
            opts = os.environ.get("ASAN_OPTIONS", "")
            return [parts[2]], (opts + ":" if opts else "") + "detect_leaks=0"
    with open(lib, "rb") as f:
        if b"__asan_init" in f.read():
            return None, None
    return [], None


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        compute(sys.argv[2])
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lib = os.path.abspath(sys.argv[1])
    if not os.path.exists(lib):
        print(f"FAIL: {lib} does not exist")
        return 1
    pre, asan_options = sanitizer_preload(lib)
    if pre is None:
        print(f"SKIP blas_numpy: {lib} needs the ASan runtime, which it does not link; "
              "cannot preload it into an uninstrumented Python")
        return 77
    cases = operands()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tessera.npz")
        env = dict(os.environ, LD_PRELOAD=" ".join(pre + [lib]), TESSERA_BLAS_VERBOSE="1",
                   LD_DEBUG="bindings", LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"))
        if asan_options is not None:
            env["ASAN_OPTIONS"] = asan_options
        env.pop("TESSERA_BLAS_DISABLE", None)
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", out],
                               env=env, capture_output=True, text=True, timeout=600)
        if child.returncode != 0:
            print(f"FAIL: the preloaded child exited {child.returncode}\n{child.stdout}\n{child.stderr}")
            return 1
        got = np.load(out)
        # The dynamic linker's own record: which object cblas_sgemm bound to.
        bindings = ""
        for f in os.listdir(tmp):
            if f.startswith("ld."):
                with open(os.path.join(tmp, f), errors="replace") as fh:
                    bindings += "".join(l for l in fh if "`cblas_sgemm'" in l)

    per = lines_per_case(child.stderr, len(cases))
    for i, (name, x, y, via_blas) in enumerate(cases):
        want64 = x.astype(np.float64) @ y.astype(np.float64)
        ours = x @ y  # this process: the system BLAS, no preload
        k = x.shape[-1]
        # float32 products of length k: both answers within a few k eps of
        # the exact one, scaled by the sum of |terms|.
        bound = 4 * (k + 2) * np.finfo(np.float32).eps * (np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64))
        for key in ("c", "d"):
            t = got[f"{key}{i}"]
            if t.shape != want64.shape or t.dtype != np.float32:
                print(f"FAIL {name}: shape/dtype {t.shape} {t.dtype}, want {want64.shape} float32")
                failures += 1
                continue
            err_t = np.abs(t - want64) - bound
            err_o = np.abs(ours - want64) - bound
            if (err_t > 0).any() or (err_o > 0).any():
                print(f"FAIL {name} ({'matmul' if key == 'c' else 'dot'}): max error over bound "
                      f"tessera {err_t.max():.3g}, numpy {err_o.max():.3g}")
                failures += 1
            if not np.allclose(t, ours, rtol=1e-4, atol=1e-5 * k):
                print(f"FAIL {name}: preloaded and plain NumPy differ by {np.abs(t - ours).max():.3g}")
                failures += 1
        ran = [l for l in per[i] if "-> tessera " in l]
        status = f"{len(ran)} call(s) in Tessera" if ran else "no BLAS call (NumPy's own loop)"
        print(f"ok   {name}: {status}")
        for l in per[i][:2]:
            print(f"       {l}")
        if via_blas and not ran:
            print(f"FAIL {name}: NumPy should have called cblas_sgemm, but no call reached Tessera")
            failures += 1
        bad = [l for l in per[i] if "-> tessera " not in l and "quick-return" not in l]
        if bad:
            print(f"FAIL {name}: calls that did not run in Tessera: {bad}")
            failures += 1

    if bindings:
        if "libtessera_blas" not in bindings:
            print(f"FAIL: the dynamic linker bound cblas_sgemm elsewhere:\n{bindings}")
            failures += 1
        else:
            print("ok   LD_DEBUG=bindings: " + bindings.strip().splitlines()[0].split(":", 1)[-1].strip())
    else:
        print("note: LD_DEBUG gave no binding record for cblas_sgemm; relying on TESSERA_BLAS_VERBOSE")

    print(f"{'FAIL' if failures else 'PASS'} blas_numpy: {len(cases)} cases, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
