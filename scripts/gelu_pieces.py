#!/usr/bin/python3
"""Fits arch/x86_avx512/verf.h's GELU (erf) pieces and prints them as C rows.

Phi(-a) = erfc(a / sqrt 2) / 2 for a in [0, 4) by 32 pieces of 1/8: piece
i = floor(8a) a polynomial in v = a - i/8 in [0, 1/8). Each is fitted in
u = 8v for the least worst relative error (Lawson's reweighted least
squares on a dense grid), its coefficients rounded to float one at a time
with the later ones refitted to the rounded earlier ones; the rows are
those times 8^k, exact in float, so the kernel's sums are the fit's.
Then the kernel's evaluation is simulated in float (FMA rounded once) over
every float a in [0, 4) of a stride and the worst relative error printed.

usage: scripts/gelu_pieces.py DEGREE [NAME]   (needs numpy: /usr/bin/python3)
"""
import math
import sys

import numpy as np

PIECES, WIDTH = 32, 0.125


def phi_neg(a):
    return np.array([0.5 * math.erfc(t / math.sqrt(2.0)) for t in np.ravel(a)]).reshape(np.shape(a))


def fit_piece(i, degree, grid=2049, rounds=60):
    u = np.linspace(0.0, 1.0, grid)
    f = phi_neg((i + u) * WIDTH)
    basis = np.vander(u, degree + 1, increasing=True) / f[:, None]  # relative error's rows
    fixed = np.zeros(0)
    for k in range(degree + 1):
        w = np.ones(grid)
        rest = 1.0 - basis[:, :k] @ fixed
        for _ in range(rounds):
            sw = np.sqrt(w)
            c, *_ = np.linalg.lstsq(basis[:, k:] * sw[:, None], rest * sw, rcond=None)
            e = np.abs(basis[:, k:] @ c - rest)
            w *= e / e.max() + 1e-12
            w /= w.sum()
        fixed = np.append(fixed, np.float32(c[0] * 8.0 ** k) / 8.0 ** k)
    return fixed


def simulate(rows, degree, stride=97):
    """The kernel's q = Phi(-a) in float with one rounding per FMA, against the definition."""
    bits = np.arange(0, 0x40800000, stride, dtype=np.uint32)
    a = bits.view(np.float32)
    i = np.floor(a.astype(np.float64) * 8).astype(np.int64)
    v = (a - (i / 8.0).astype(np.float32)).astype(np.float32)  # exact: Sterbenz
    q = rows[degree][i]
    for d in range(degree - 1, -1, -1):
        q = (q.astype(np.float64) * v + rows[d][i]).astype(np.float32)
    want = phi_neg(a.astype(np.float64))
    return np.max(np.abs(q / want - 1.0))


def main():
    degree = int(sys.argv[1])
    name = sys.argv[2] if len(sys.argv) > 2 else "gelu_erf_pieces_%d" % degree
    rows = np.zeros((degree + 1, PIECES), dtype=np.float32)
    for i in range(PIECES):
        c = fit_piece(i, degree)
        rows[:, i] = [np.float32(c[k] * 8.0 ** k) for k in range(degree + 1)]
    print("/* scripts/gelu_pieces.py %d: worst relative error of the float evaluation %.2e */" %
          (degree, simulate(rows, degree)))
    print("static const float %s[%d][32] __attribute__((aligned(64))) = {" % (name, degree + 1))
    for r in rows:
        print("    {")
        for j in range(0, PIECES, 4):
            print("        " + " ".join("%.9ef," % x for x in r[j:j + 4]))
        print("    },")
    print("};")


if __name__ == "__main__":
    main()
