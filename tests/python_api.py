#!/usr/bin/python3
"""The Python package (python/tessera) against NumPy references computed in
float64: gemm, conv2d, attention, softmax, layer_norm, rms_norm and chains
on awkward shapes (1, primes), transposed and strided views, batches, every
dtype; __dlpack__ inputs (NumPy's own, a hand-made bfloat16 capsule, DLPack 1.x
versioned capsules with their read-only flag and version checks);
errors as TesseraError subclasses carrying the library's message; the
ctypes layout check; `python -m tessera info`; the descriptor cache of
repeated gemm calls. Per-call overhead is measured by
bridges/bench_overhead.py, not here.

Run with /usr/bin/python3 (Debian's NumPy) and TESSERA_LIBRARY pointing at
the built libtessera.so; meson does both (tests/meson.build).
"""

import ctypes
import math
import os
import re
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

try:
    import numpy as np
except ImportError:
    print(f"SKIP python_api: numpy not importable by {sys.executable}")
    sys.exit(77)

import tessera  # noqa: E402
from tessera import _lib as L  # noqa: E402

RNG = np.random.default_rng(20240611)
TESTS = []


def test(f):
    TESTS.append(f)
    return f


def rand(*shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def close(got, want, tol, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
    bound = tol * (1.0 + np.abs(want))
    bad = ~(err <= bound) & ~(np.isnan(got) & np.isnan(want)) & ~(got == want)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {bad.sum()} of {bad.size} differ; first at {i}: got {got[i]!r}, "
                             f"want {want[i]!r} (tol {tol})")


def raises(cls, fragments, f, *a, **kw):
    try:
        f(*a, **kw)
    except cls as e:
        assert isinstance(e, tessera.TesseraError), f"{type(e).__name__} is not a TesseraError"
        msg = e.message
        for frag in fragments:
            assert frag in msg, f"message {msg!r} lacks {frag!r}"
        assert e.status == cls.status and e.status_name.startswith("TSR_ERR_"), (e.status, e.status_name)
        return e
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"expected {cls.__name__}, got {type(e).__name__}: {e}") from None
    raise AssertionError(f"expected {cls.__name__}, nothing was raised")


F64 = np.float64


def act_ref(x, act):
    if act is None:
        return x
    erf = np.vectorize(math.erf)
    return {
        "relu": lambda v: np.maximum(v, 0),
        "gelu": lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))),
        "gelu_tanh": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))),
        "silu": lambda v: v / (1 + np.exp(-v)),
        "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "tanh": np.tanh,
    }[act](x)


# ------------------------------------------------------------------- gemm

@test
def gemm_shapes_and_views():
    for m, n, k in [(1, 1, 1), (2, 2, 2), (7, 13, 5), (31, 17, 23), (1, 29, 64), (67, 1, 3), (5, 3, 1)]:
        a, b = rand(m, k), rand(k, n)
        want = a.astype(F64) @ b.astype(F64)
        close(tessera.gemm(a, b), want, 1e-5, f"{m}x{n}x{k}")
        # transposed views: stored k x m / n x k, read through trans flags
        close(tessera.gemm(np.ascontiguousarray(a.T), b, trans_a=True), want, 1e-5, "trans_a")
        close(tessera.gemm(a, np.ascontiguousarray(b.T), trans_b=True), want, 1e-5, "trans_b")
        close(tessera.gemm(np.ascontiguousarray(a.T).T, b), want, 1e-5, "a as a transposed view")
        close(tessera.gemm(np.asfortranarray(a), np.asfortranarray(b)), want, 1e-5, "column-major a, b")
        # padded rows (a slice of a wider array) and a strided column view (copied)
        wide = rand(m, k + 3)
        wide[:, :k] = a
        close(tessera.gemm(wide[:, :k], b), want, 1e-5, "padded rows")
        sparse = rand(m, 2 * k)
        sparse[:, ::2] = a
        close(tessera.gemm(sparse[:, ::2], b), want, 1e-5, "stride-2 columns")
        rev = np.ascontiguousarray(a[::-1])[::-1]
        close(tessera.gemm(rev, b), want, 1e-5, "negative row stride")


@test
def gemm_out_alpha_beta_and_views_of_c():
    a, b = rand(11, 7), rand(7, 5)
    ab = a.astype(F64) @ b.astype(F64)
    for c in (rand(11, 5), np.asfortranarray(rand(11, 5)), rand(11, 10)[:, ::2], rand(5, 11).T):
        c0 = c.astype(F64)
        got = tessera.gemm(a, b, c=c, alpha=1.5, beta=-0.5)
        assert got is c
        close(c, 1.5 * ab - 0.5 * c0, 1e-5, f"c with strides {c.strides}")
    nan = np.full((11, 5), np.nan, np.float32)
    tessera.gemm(a, b, c=nan, beta=0.0)
    close(nan, ab, 1e-5, "beta 0 ignores NaN in c")
    raises(tessera.InvalidArgumentError, ["gemm: beta (0.5) needs c"], tessera.gemm, a, b, beta=0.5)
    raises(tessera.InvalidArgumentError, ["gemm: c is read-only"], tessera.gemm, a, b,
           c=np.broadcast_to(np.float32(0), (11, 5)))


@test
def gemm_batches():
    A, B = rand(4, 7, 5), rand(4, 5, 3)
    close(tessera.gemm(A, B), A.astype(F64) @ B, 1e-5, "strided batch")
    b2 = rand(5, 3)
    close(tessera.gemm(A, b2), A.astype(F64) @ b2, 1e-5, "shared 2-D b (folded into rows)")
    close(tessera.gemm(A, np.asfortranarray(b2)), A.astype(F64) @ b2, 1e-5, "shared column-major b")
    a2 = rand(7, 5)
    close(tessera.gemm(a2, B), a2.astype(F64) @ B, 1e-5, "shared 2-D a")
    A4, B4 = rand(2, 3, 7, 5), rand(2, 3, 5, 3)
    close(tessera.gemm(A4, B4), A4.astype(F64) @ B4, 1e-5, "4-D batch")
    Bb = rand(1, 3, 5, 3)
    close(tessera.gemm(A4, Bb), A4.astype(F64) @ Bb, 1e-5, "broadcast batch dim")
    At = np.ascontiguousarray(A.swapaxes(1, 2))
    close(tessera.gemm(At, B, trans_a=True), A.astype(F64) @ B, 1e-5, "batch of transposed a")
    close(tessera.gemm(A.swapaxes(1, 2).copy().swapaxes(1, 2), B), A.astype(F64) @ B, 1e-5,
          "batch of column-major a")
    gap = rand(4, 9, 5)[:, :7]  # batch stride 45, rows 5: a padded batch
    close(tessera.gemm(gap, B), gap.astype(F64) @ B, 1e-5, "batch with gaps")
    close(tessera.gemm(rand(0, 7, 5), rand(0, 5, 3)), np.zeros((0, 7, 3)), 0, "empty batch")
    close(tessera.gemm(rand(3, 0), rand(0, 4)), np.zeros((3, 4)), 0, "k = 0")


@test
def gemm_dtypes():
    a, b = rand(9, 6), rand(6, 7)
    got = tessera.gemm(a.astype(np.float16), b.astype(np.float16))
    assert got.dtype == np.float16
    close(got, a.astype(np.float16).astype(F64) @ b.astype(np.float16).astype(F64), 2e-3, "f16 -> f16")
    got = tessera.gemm(a.astype(np.float16), b.astype(np.float16), out_dtype="f32")
    assert got.dtype == np.float32
    close(got, a.astype(np.float16).astype(F64) @ b.astype(np.float16).astype(F64), 1e-5, "f16 -> f32")
    ab, bb = tessera.to_bf16(a), tessera.to_bf16(b)
    ref = tessera.from_bf16(ab).astype(F64) @ tessera.from_bf16(bb).astype(F64)
    got = tessera.gemm(ab, bb, dtype="bf16")
    assert got.dtype == np.uint16
    close(tessera.from_bf16(got), ref, 1e-2, "bf16 -> bf16")
    close(tessera.gemm(ab, bb, dtype="bf16", out_dtype=np.float32), ref, 1e-5, "bf16 -> f32")
    ai, bi = RNG.integers(-128, 128, (9, 6)).astype(np.int8), RNG.integers(-128, 128, (6, 7)).astype(np.int8)
    got = tessera.gemm(ai, bi)
    assert got.dtype == np.int32
    assert (got == ai.astype(np.int64) @ bi.astype(np.int64)).all(), "i8 -> i32 is exact"
    raises(tessera.NotSupportedError, ["gemm: a has dtype float64", "float32, float16, bfloat16"],
           tessera.gemm, a.astype(F64), b)
    raises(tessera.NotSupportedError, ["gemm: a has dtype uint16", "dtype='bf16'"], tessera.gemm, ab, bb)
    raises(tessera.NotSupportedError, ["gemm: a is f32 but b is f16"], tessera.gemm, a, b.astype(np.float16))
    raises(tessera.NotSupportedError, ["gemm: an epilogue needs a float output, not i32"],
           tessera.gemm, ai, bi, activation="relu")


@test
def gemm_epilogues():
    a, b = rand(13, 8), rand(8, 11)
    bias, res = rand(11), rand(13, 11)
    ab = a.astype(F64) @ b.astype(F64)
    for act in (None, "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"):
        got = tessera.gemm(a, b, bias=bias, activation=act, residual=res, residual_scale=0.5, alpha=0.75)
        close(got, act_ref(0.75 * ab + bias, act) + 0.5 * res, 2e-5, f"bias+{act}+residual")
    # column-major output and a row-major residual: the residual is re-laid to match
    c = np.asfortranarray(np.zeros((13, 11), np.float32))
    tessera.gemm(a, b, c=c, bias=bias, residual=res)
    close(c, ab + bias + res, 2e-5, "column-major c with residual")
    # batched: per-batch residual, shared bias
    A, B, R = rand(3, 5, 8), rand(3, 8, 4), rand(3, 5, 4)
    close(tessera.gemm(A, B, bias=bias[:4], residual=R), A.astype(F64) @ B + bias[:4] + R, 2e-5, "batched epilogue")
    close(tessera.gemm(A, b, residual=rand(5, 11) * 0 + 1), A.astype(F64) @ b + 1, 2e-5, "folded + broadcast residual")
    raises(tessera.InvalidArgumentError, ["gemm: bias has shape (10,); it must be (11,)"], tessera.gemm, a, b,
           bias=rand(10))
    raises(tessera.InvalidArgumentError, ["gemm: activation 'swish' is not one of"], tessera.gemm, a, b,
           activation="swish")
    raises(tessera.InvalidArgumentError, ["gemm: residual (13, 10) does not broadcast"], tessera.gemm, a, b,
           residual=rand(13, 10))


@test
def gemm_errors_name_the_argument():
    a = rand(7, 5)
    raises(tessera.InvalidArgumentError, ["gemm: op(b) has 7 rows but op(a) has 5 columns"], tessera.gemm, a, a)
    raises(tessera.InvalidArgumentError, ["gemm: a (5,) and b (5, 5) must be matrices"], tessera.gemm,
           rand(5), rand(5, 5))
    raises(tessera.InvalidArgumentError, ["gemm: c has shape (7, 4) but the product's is (7, 5)"], tessera.gemm,
           a, rand(5, 5), c=rand(7, 4))
    raises(tessera.InvalidArgumentError, ["gemm: dtype='f64'"], tessera.gemm, a, a.T, dtype="f64")


@test
def views_are_not_copied():
    """Views the ABI can express reach the library as they are: gemm caches a
    descriptor only when a, b and the output went in uncopied, and nothing
    calls np.ascontiguousarray for them."""
    real = np.ascontiguousarray
    calls = []

    def counting(*args, **kw):
        calls.append(args[0].shape if args else None)
        return real(*args, **kw)

    a, b = rand(9, 7), rand(7, 5)
    cases = [(real(a.T), b, {"trans_a": True}), (a, real(b.T).T, {}), (np.asfortranarray(a), b, {}),
             (rand(9, 12)[:, :7], b, {}), (rand(3, 9, 7), b, {}), (rand(3, 9, 7), rand(3, 7, 5), {}),
             (rand(2, 9, 7), rand(2, 5, 7), {"trans_b": True}), (rand(11, 9)[::2, ::-1][:, ::-1], rand(9, 3), {})]
    qkv = rand(2, 9, 3, 4, 8)
    q, k, v = (qkv[:, :, i].swapaxes(1, 2) for i in range(3))
    np.ascontiguousarray = counting
    try:
        for x, y, kw in cases:
            n0 = len(tessera._ops._gemm_cache)
            tessera.gemm(x, y, **kw)
            assert len(tessera._ops._gemm_cache) == n0 + 1, f"gemm copied a view: a {x.shape} {x.strides}, " \
                f"b {y.shape} {y.strides}"
            tessera.gemm(x, y, **kw)  # the cached descriptor serves the second call
        tessera.attention(q, k, v, causal=True)
        tessera.softmax(rand(6, 20)[:, 3:14])
        tessera.layer_norm(rand(6, 20)[::2, :11])
        tessera.chain(rand(5, 7).T).add(rand(7, 1)).relu().run()
    finally:
        np.ascontiguousarray = real
    assert not calls, f"np.ascontiguousarray ran for {calls}"


# ------------------------------------------------------------------ conv2d

def conv_ref(x, w, stride, pad, dil, groups, nchw, fl):
    """float64 reference in NHWC/OHWI terms."""
    x = x.astype(F64)
    w = w.astype(F64)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    if fl == "OIHW":
        w = w.transpose(0, 2, 3, 1)
    elif fl == "HWIO":
        w = w.transpose(3, 0, 1, 2)
    n, h, wd, c = x.shape
    k, r, s, cg = w.shape
    pt, pb, pl, pr = pad
    xp = np.zeros((n, h + pt + pb, wd + pl + pr, c))
    xp[:, pt:pt + h, pl:pl + wd] = x
    p = (h + pt + pb - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + pl + pr - dil[1] * (s - 1) - 1) // stride[1] + 1
    y = np.zeros((n, p, q, k))
    kg = k // groups
    for g in range(groups):
        for i in range(r):
            for j in range(s):
                patch = xp[:, i * dil[0]: i * dil[0] + stride[0] * (p - 1) + 1: stride[0],
                           j * dil[1]: j * dil[1] + stride[1] * (q - 1) + 1: stride[1], g * cg:(g + 1) * cg]
                y[..., g * kg:(g + 1) * kg] += np.einsum("npqc,kc->npqk", patch, w[g * kg:(g + 1) * kg, i, j])
    return y.transpose(0, 3, 1, 2) if nchw else y


@test
def conv2d_cases():
    cases = [  # n, h, w, c, k, r, s, stride, padding, dilation, groups
        (1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1),
        (2, 7, 5, 3, 4, 3, 3, 1, 1, 1, 1),
        (1, 11, 13, 6, 6, 3, 3, 2, (1, 2), 1, 3),
        (1, 9, 9, 5, 5, 3, 3, 1, "same", 2, 5),       # depthwise, dilated
        (3, 8, 7, 2, 7, 2, 3, (2, 1), (0, 1, 2, 0), (1, 2), 1),
        (1, 6, 6, 4, 8, 1, 1, 1, "valid", 1, 2),
    ]
    for layout in ("NHWC", "NCHW"):
        for fl in (None, "HWIO"):
            for (n, h, w, c, k, r, s, stride, padding, dil, groups) in cases:
                xs = (n, h, w, c) if layout == "NHWC" else (n, c, h, w)
                x = rand(*xs)
                flay = fl or ("OHWI" if layout == "NHWC" else "OIHW")
                ws = {"OHWI": (k, r, s, c // groups), "OIHW": (k, c // groups, r, s),
                      "HWIO": (r, s, c // groups, k)}[flay]
                wt = rand(*ws)
                st = (stride, stride) if isinstance(stride, int) else stride
                dl = (dil, dil) if isinstance(dil, int) else dil
                if padding == "same":
                    th, tw = dl[0] * (r - 1), dl[1] * (s - 1)
                    pad = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
                elif padding == "valid":
                    pad = (0, 0, 0, 0)
                elif isinstance(padding, int):
                    pad = (padding,) * 4
                elif len(padding) == 2:
                    pad = (padding[0], padding[0], padding[1], padding[1])
                else:
                    pad = padding
                want = conv_ref(x, wt, st, pad, dl, groups, layout == "NCHW", flay)
                got = tessera.conv2d(x, wt, stride=stride, padding=padding, dilation=dil, groups=groups,
                                     layout=layout, filter_layout=fl)
                close(got, want, 1e-5, f"conv {layout}/{flay} {xs} k{k} r{r}s{s} st{stride} pad{padding} "
                      f"dil{dil} g{groups}")
    # epilogue, f16, a transposed input view (copied to dense)
    x, wt, bias = rand(2, 6, 5, 4), rand(3, 3, 3, 4), rand(3)
    want = conv_ref(x, wt, (1, 1), (1, 1, 1, 1), (1, 1), 1, False, "OHWI")
    close(tessera.conv2d(x, wt, bias=bias, padding=1, activation="relu"), np.maximum(want + bias, 0), 1e-5,
          "conv bias+relu")
    res = rand(2, 6, 5, 3)
    close(tessera.conv2d(x, wt, bias=bias, padding=1, residual=res, residual_scale=2.0), want + bias + 2 * res,
          1e-5, "conv residual")
    y16 = tessera.conv2d(x.astype(np.float16), wt.astype(np.float16), padding=1)
    assert y16.dtype == np.float16
    close(y16, conv_ref(x.astype(np.float16), wt.astype(np.float16), (1, 1), (1, 1, 1, 1), (1, 1), 1, False,
                        "OHWI"), 3e-3, "conv f16")
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    close(tessera.conv2d(xt, wt, padding=1), want, 1e-5, "conv of a transposed view")
    raises(tessera.InvalidArgumentError, ["conv2d: groups (3) does not divide k (4)"], tessera.conv2d,
           rand(1, 4, 4, 6), rand(4, 3, 3, 2), groups=3)
    raises(tessera.InvalidArgumentError, ["conv2d: w (4, 3, 3, 5) (OHWI) has 5 input channels per group"],
           tessera.conv2d, rand(1, 4, 4, 6), rand(4, 3, 3, 5))
    raises(tessera.InvalidArgumentError, ["conv2d: the output is empty"], tessera.conv2d, rand(1, 4, 4, 6),
           rand(4, 5, 5, 6))
    raises(tessera.InvalidArgumentError, ["conv2d: layout 'NWHC'"], tessera.conv2d, x, wt, layout="NWHC")
    raises(tessera.InvalidArgumentError, ["conv2d: bias has shape (4,); it must be (3,)"], tessera.conv2d, x,
           wt, bias=rand(4))


# --------------------------------------------------------------- attention

def attn_ref(q, k, v, causal, scale, mask):
    q, k, v = q.astype(F64), k.astype(F64), v.astype(F64)
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    kk = np.repeat(k, g, axis=1)
    vv = np.repeat(v, g, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, kk) * (scale if scale else 1 / math.sqrt(D))
    if mask is not None:
        s = s + mask
    if causal:
        i = np.arange(Sq)[:, None]
        j = np.arange(Skv)[None, :]
        allowed = j <= i if causal == "top_left" else j <= i + Skv - Sq
        s = np.where(allowed, s, -np.inf)
    mx = s.max(-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0)
    e = np.exp(s - mx)
    den = e.sum(-1, keepdims=True)
    p = np.where(den > 0, e / np.where(den > 0, den, 1), 0)
    lse = np.where(den[..., 0] > 0, np.log(np.where(den[..., 0] > 0, den[..., 0], 1)) + mx[..., 0], -np.inf)
    return np.einsum("bhij,bhjd->bhid", p, vv), lse


@test
def attention_cases():
    for (B, Hq, Hkv, Sq, Skv, D) in [(1, 1, 1, 1, 1, 1), (2, 4, 2, 7, 13, 16), (1, 6, 1, 5, 5, 8),
                                     (3, 3, 3, 17, 3, 5)]:
        q, k, v = rand(B, Hq, Sq, D), rand(B, Hkv, Skv, D), rand(B, Hkv, Skv, D)
        for causal in (None, "top_left", "bottom_right"):
            want, lse = attn_ref(q, k, v, causal, None, None)
            got, glse = tessera.attention(q, k, v, causal=causal, return_lse=True)
            close(got, want, 2e-5, f"attention {q.shape} {k.shape} causal={causal}")
            close(glse, lse, 2e-5, f"lse {q.shape} causal={causal}")
        # BSHD storage, explicit scale
        want, _ = attn_ref(q, k, v, None, 0.3, None)
        qs, ks, vs = (np.ascontiguousarray(t.swapaxes(1, 2)) for t in (q, k, v))
        got = tessera.attention(qs, ks, vs, layout="BSHD", scale=0.3)
        close(got.swapaxes(1, 2), want, 2e-5, "attention BSHD")
        # masks: additive broadcast over heads; boolean (True = attend)
        mask = rand(B, 1, Sq, Skv)
        want, _ = attn_ref(q, k, v, None, None, mask)
        close(tessera.attention(q, k, v, mask=mask), want, 2e-5, "additive mask")
        keep = RNG.random((Sq, Skv)) > 0.3
        keep[:, 0] = True
        want, _ = attn_ref(q, k, v, None, None, np.where(keep, 0.0, -np.inf))
        close(tessera.attention(q, k, v, mask=keep), want, 2e-5, "boolean mask")
    # heads sliced from a packed qkv projection: strided views, no copy
    B, S, H, D = 2, 9, 3, 8
    qkv = rand(B, S, 3, H, D)
    q, k, v = (qkv[:, :, i].swapaxes(1, 2) for i in range(3))  # BHSD views of a BS3HD buffer
    want, _ = attn_ref(q, k, v, "top_left", None, None)
    close(tessera.attention(q, k, v, causal=True), want, 2e-5, "packed qkv views")
    # 3-D (no batch), f16
    q3, k3 = rand(2, 4, 8), rand(2, 6, 8)
    want, _ = attn_ref(q3[None], k3[None], k3[None], None, None, None)
    close(tessera.attention(q3, k3, k3), want[0], 2e-5, "3-D")
    got16 = tessera.attention(q3.astype(np.float16), k3.astype(np.float16), k3.astype(np.float16))
    assert got16.dtype == np.float16
    close(got16, want[0], 5e-3, "f16")
    raises(tessera.InvalidArgumentError, ["attention: heads_q (3) is not a multiple of heads_kv (2)"],
           tessera.attention, rand(1, 3, 4, 8), rand(1, 2, 4, 8), rand(1, 2, 4, 8))
    raises(tessera.InvalidArgumentError, ["attention: shapes do not agree"], tessera.attention,
           rand(1, 2, 4, 8), rand(1, 2, 4, 4), rand(1, 2, 4, 4))
    raises(tessera.NotSupportedError, ["attention: q, k and v must have one dtype"], tessera.attention,
           q3.astype(np.float16), k3, k3)
    raises(tessera.InvalidArgumentError, ["attention: causal 'diagonal'"], tessera.attention, q3, k3, k3,
           causal="diagonal")
    raises(tessera.InvalidArgumentError, ["attention: mask (3, 7) does not broadcast"], tessera.attention,
           q3, k3, k3, mask=rand(3, 7))


# ------------------------------------------------------------------ rowwise

@test
def rowwise_ops():
    for shape in [(1,), (1, 1), (7,), (3, 13), (2, 5, 31), (4, 1)]:
        x = rand(*shape, lo=-3, hi=3)
        xd = x.astype(F64)
        e = np.exp(xd - xd.max(-1, keepdims=True))
        close(tessera.softmax(x), e / e.sum(-1, keepdims=True), 1e-6, f"softmax {shape}")
        cols = shape[-1]
        g, b = rand(cols), rand(cols)
        mu = xd.mean(-1, keepdims=True)
        var = ((xd - mu) ** 2).mean(-1, keepdims=True)
        close(tessera.layer_norm(x, g, b, eps=1e-3), (xd - mu) / np.sqrt(var + 1e-3) * g + b, 2e-5,
              f"layer_norm {shape}")
        close(tessera.layer_norm(x), (xd - mu) / np.sqrt(var + 1e-5), 2e-5, f"layer_norm no affine {shape}")
        ms = (xd ** 2).mean(-1, keepdims=True)
        close(tessera.rms_norm(x, g), xd / np.sqrt(ms + 1e-5) * g, 2e-5, f"rms_norm {shape}")
    # views: padded rows, a transposed view, another axis
    big = rand(6, 20)
    v = big[:, 3:14]
    e = np.exp(v - v.max(-1, keepdims=True))
    close(tessera.softmax(v), e / e.sum(-1, keepdims=True), 1e-6, "softmax of padded rows")
    t = big.T
    e = np.exp(t - t.max(-1, keepdims=True))
    close(tessera.softmax(t), e / e.sum(-1, keepdims=True), 1e-6, "softmax of a transposed view")
    e = np.exp(big - big.max(0, keepdims=True))
    close(tessera.softmax(big, axis=0), e / e.sum(0, keepdims=True), 1e-6, "softmax axis 0")
    y16 = tessera.softmax(big.astype(np.float16))
    assert y16.dtype == np.float16
    yb = tessera.rms_norm(tessera.to_bf16(big), dtype="bf16", out_dtype="f32")
    xb = tessera.from_bf16(tessera.to_bf16(big)).astype(F64)
    close(yb, xb / np.sqrt((xb ** 2).mean(-1, keepdims=True) + 1e-5), 2e-5, "rms_norm bf16 -> f32")
    ninf = np.full((2, 3), -np.inf, np.float32)
    close(tessera.softmax(ninf), np.zeros((2, 3)), 0, "all -inf row gives zeros")
    raises(tessera.NotSupportedError, ["softmax: x_dtype i8 is not supported"], tessera.softmax,
           np.ones((2, 3), np.int8))
    raises(tessera.InvalidArgumentError, ["layernorm: epsilon (0) must be finite and > 0"], tessera.layer_norm,
           rand(2, 3), eps=0.0)
    raises(tessera.InvalidArgumentError, ["layer_norm: gamma has shape (4,); it must be (3,)"],
           tessera.layer_norm, rand(2, 3), rand(4))
    raises(tessera.InvalidArgumentError, ["softmax: x is a scalar"], tessera.softmax, np.float32(1.0))


# ------------------------------------------------------------------- chains

@test
def chains():
    x, bias = rand(5, 7, lo=-2, hi=2), rand(7)
    xd = x.astype(F64)
    got = tessera.chain(x).add(bias).gelu().mul(0.5).run()
    close(got, act_ref(xd + bias, "gelu") * 0.5, 2e-6, "add(bias).gelu().mul(0.5)")
    col = rand(5, 1)
    got = tessera.chain(x).rsub(col).abs().sqrt().rdiv(1.0).maximum(0.25).minimum(bias + 3).run()
    want = np.minimum(np.maximum(1.0 / np.sqrt(np.abs(col - xd)), 0.25), bias.astype(F64) + 3)
    close(got, want, 2e-6, "rsub/abs/sqrt/rdiv/max/min with broadcast operands")
    got = tessera.chain(x.T).square().add(1).log().exp().sub(1).run()  # a transposed view in
    close(got, xd.T ** 2, 1e-5, "transposed input")
    pos = rand(4, 3, lo=0.5, hi=2)
    close(tessera.chain(pos).pow(1.5).rpow(2.0).run(), 2.0 ** (pos.astype(F64) ** 1.5), 1e-5, "pow/rpow")
    got = tessera.chain(rand(3)).add(rand(4, 1)).run()  # x broadcasts too
    assert got.shape == (4, 3)
    out = np.zeros((7, 5), np.float32).T  # a transposed output view
    tessera.chain(x).silu().run(out)
    close(out, act_ref(xd, "silu"), 2e-6, "into a transposed out")
    h = tessera.chain(x).tanh().run(out_dtype="f16")
    assert h.dtype == np.float16
    close(h, np.tanh(xd), 1e-3, "f16 output")
    one = tessera.chain(np.float32(2.0)).mul(3.0).run()
    assert one.shape == () and float(one) == 6.0
    scalar_arr = np.broadcast_to(np.float32(3), (5, 7))  # all strides 0
    close(tessera.chain(scalar_arr).add(x).run(), xd + 3, 1e-6, "fully broadcast x")
    c = tessera.chain(x)
    for _ in range(17):
        c.neg()
    raises(tessera.InvalidArgumentError, ["chain: desc already has 16 steps (at most 16)"], c.run)
    c = tessera.chain(x)
    for _ in range(5):
        c.add(bias)
    raises(tessera.InvalidArgumentError, ["chain: desc already has 4 operands (at most 4)"], c.run)
    raises(tessera.InvalidArgumentError, ["chain: x (5, 7) and the operands (6,) do not broadcast"],
           tessera.chain(x).add(rand(6)).run)
    raises(tessera.InvalidArgumentError, ["chain: out is read-only"], tessera.chain(x).run,
           np.broadcast_to(np.float32(0), (5, 7)))


# ------------------------------------------------------------------- DLPack

class OnlyDLPack:
    """An object that speaks only __dlpack__ (NumPy's, underneath)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


_deleted = []
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


@_DELETER
def _record_delete(ptr):
    _deleted.append(ptr)


class HandMadeDLPack:
    """A producer written here with ctypes: any dtype code (bfloat16 included),
    strides, byte_offset and device, and a deleter that records its calls."""

    def __init__(self, buf, shape, strides, code, bits, byte_offset=0, device=(1, 0)):
        self.buf, self.device = buf, device
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
        self.m = L.DLManagedTensor()
        t = self.m.dl_tensor
        t.data = buf.ctypes.data
        t.device = L.DLDevice(device[0], device[1])
        t.ndim = len(shape)
        t.dtype = L.DLDataType(code, bits, 1)
        t.shape = self.shape
        t.strides = self.strides
        t.byte_offset = byte_offset
        self.m.deleter = ctypes.cast(_record_delete, type(self.m.deleter))

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self.m), b"dltensor", None)

    def __dlpack_device__(self):
        return self.device


@test
def dlpack_inputs():
    a, b = rand(6, 4), rand(4, 5)
    want = a.astype(F64) @ b.astype(F64)
    close(tessera.gemm(OnlyDLPack(a), OnlyDLPack(b)), want, 1e-5, "gemm of __dlpack__ objects")
    close(tessera.softmax(OnlyDLPack(a)), tessera.softmax(a), 0, "softmax of a __dlpack__ object")
    # bfloat16 through a capsule (NumPy has no bfloat16): a transposed view at a byte offset
    bits = tessera.to_bf16(rand(4, 6))  # stored 4 x 6; the tensor is its transpose, 6 x 4
    padded = np.concatenate([np.zeros(3, np.uint16), bits.ravel()])
    ta = HandMadeDLPack(padded, (6, 4), (1, 6), 4, 16, byte_offset=6)  # kDLBfloat
    tb = HandMadeDLPack(tessera.to_bf16(b), (4, 5), None, 4, 16)
    n_before = len(_deleted)
    got = tessera.gemm(ta, tb, out_dtype="f32")
    ref = tessera.from_bf16(bits).T.astype(F64) @ tessera.from_bf16(tessera.to_bf16(b)).astype(F64)
    close(got, ref, 1e-5, "bf16 capsules (transposed view, byte offset)")
    import gc
    gc.collect()
    assert len(_deleted) == n_before + 2, f"the deleters ran {len(_deleted) - n_before} times, want 2"
    # the library's messages for what it cannot take
    f8 = HandMadeDLPack(np.zeros(4, np.uint8), (4,), None, 2, 8)  # float8: NumPy refuses it too
    raises(tessera.NotSupportedError, ["softmax: x: tensor_desc_from_dlpack: tensor has dtype float8 (code 2, "
                                       "bits 8, lanes 1)"], tessera.softmax, f8)
    gc.collect()
    assert len(_deleted) == n_before + 2, "a refused capsule is left to its own destructor"
    raises(tessera.NotSupportedError, ["gemm: a is a HandMadeDLPack on cuda:0", "tessera.torch"],
           tessera.gemm, HandMadeDLPack(np.zeros(4, np.float32), (2, 2), None, 2, 32, device=(2, 0)), b)


_vdeleted = []
_VDELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_VDELETER
def _record_vdelete(ptr):
    _vdeleted.append(ptr)


_producers = []


class VersionedDLPack:
    """A DLPack 1.x producer written here: __dlpack__(max_version=...) gives a
    "dltensor_versioned" capsule (version, flags as given), an older request
    the legacy capsule of the same memory; `asked` records max_version."""

    def __init__(self, buf, dtype_code=2, bits=32, flags=0, version=(1, 0), name=b"dltensor_versioned"):
        self.buf, self.asked, self.name = buf, [], name
        _producers.append(self)  # a producer's tensor lives until its deleter runs; here: until exit
        self.shape = (ctypes.c_int64 * buf.ndim)(*buf.shape)
        self.strides = (ctypes.c_int64 * buf.ndim)(*(s // buf.itemsize for s in buf.strides))
        self.v = L.DLManagedTensorVersioned()
        self.v.version = L.DLPackVersion(*version)
        self.v.flags = flags
        self.v.deleter = ctypes.cast(_record_vdelete, type(self.v.deleter))
        self.legacy = L.DLManagedTensor()
        self.legacy.deleter = ctypes.cast(_record_delete, type(self.legacy.deleter))
        for t in (self.v.dl_tensor, self.legacy.dl_tensor):
            t.data = buf.ctypes.data
            t.device = L.DLDevice(1, 0)
            t.ndim = buf.ndim
            t.dtype = L.DLDataType(dtype_code, bits, 1)
            t.shape = self.shape
            t.strides = self.strides

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked.append(max_version)
        if max_version is None or max_version[0] < 1:
            return _capsule_new(ctypes.addressof(self.legacy), b"dltensor", None)
        return _capsule_new(ctypes.addressof(self.v), self.name, None)

    def __dlpack_device__(self):
        return (1, 0)


@test
def dlpack_versioned():
    import gc
    a, b = rand(5, 3), rand(3, 4)
    want = a.astype(F64) @ b.astype(F64)
    va, vb = VersionedDLPack(a), VersionedDLPack(b, flags=L.DLPACK_FLAG_READ_ONLY)
    gc.collect()
    n_v, n_l = len(_vdeleted), len(_deleted)
    close(tessera.gemm(va, vb), want, 1e-5, "gemm of DLPack 1.x tensors (b read-only: an input)")
    assert va.asked == [(1, 0)] and vb.asked == [(1, 0)], (va.asked, vb.asked)
    gc.collect()
    assert len(_vdeleted) == n_v + 2 and len(_deleted) == n_l, \
        f"versioned deleters ran {len(_vdeleted) - n_v} times (want 2), legacy {len(_deleted) - n_l} (want 0)"
    # an output: written in place when writable ...
    cbuf = np.ones((5, 4), np.float32)
    vc = VersionedDLPack(cbuf)
    out = tessera.gemm(a, b, c=vc, beta=2.0)
    close(cbuf, want + 2.0, 1e-5, "c= a writable DLPack 1.x tensor, written in place")
    assert out.ctypes.data == cbuf.ctypes.data, "the result is not a view of the producer's memory"
    del out
    # ... refused by name when its producer flags it read-only, and left untouched
    ro = np.full((5, 4), 7.0, np.float32)
    vro = VersionedDLPack(ro, flags=L.DLPACK_FLAG_READ_ONLY)
    gc.collect()
    n_v = len(_vdeleted)
    raises(tessera.InvalidArgumentError, ["gemm: dlpack_versioned_tensor: c is flagged read-only by its producer",
                                          "cannot be an output"], tessera.gemm, a, b, c=vro, beta=1.0)
    raises(tessera.InvalidArgumentError, ["chain: dlpack_versioned_tensor: out is flagged read-only"],
           tessera.chain(a).exp().run, VersionedDLPack(np.zeros((5, 3), np.float32),
                                                        flags=L.DLPACK_FLAG_READ_ONLY))
    assert (ro == 7.0).all(), "a read-only output was written"
    gc.collect()
    assert len(_vdeleted) == n_v, "a refused versioned capsule must be left to its own destructor"
    # as an input it comes back read-only, so nothing downstream writes it
    arr, _ = tessera._arrays.from_dlpack(VersionedDLPack(ro, flags=L.DLPACK_FLAG_READ_ONLY), "x", "test")
    assert not arr.flags.writeable and (arr == 7.0).all()
    del arr
    # bfloat16 through a versioned capsule (NumPy has no bfloat16)
    bits = tessera.to_bf16(a)
    close(tessera.gemm(VersionedDLPack(bits, 4, 16), VersionedDLPack(tessera.to_bf16(b), 4, 16),
                       out_dtype="f32"), tessera.from_bf16(bits).astype(F64) @ tessera.from_bf16(
                           tessera.to_bf16(b)), 1e-5, "bf16 DLPack 1.x tensors")
    # a major version this package does not know: refused, naming both
    raises(tessera.NotSupportedError, ["gemm: dlpack_versioned_tensor: a is a DLPack 2.0 tensor", "DLPack 1.x"],
           tessera.gemm, VersionedDLPack(a, version=(2, 0)), b)
    # a later minor version only adds: accepted
    close(tessera.gemm(VersionedDLPack(a, version=(1, 7)), b), want, 1e-5, "DLPack 1.7 tensor")
    raises(tessera.InvalidArgumentError, ["gemm: b.__dlpack__() returned a capsule named b'used_dltensor'"],
           tessera.gemm, a, VersionedDLPack(b, name=b"used_dltensor"))
    # a producer from before DLPack 1.0 (no max_version keyword) gets the legacy call
    legacy_calls = []

    class OldProducer(OnlyDLPack):
        def __dlpack__(self, stream=None):
            legacy_calls.append(stream)
            return super().__dlpack__(stream)

    close(tessera.gemm(OldProducer(a), b), want, 1e-5, "pre-1.0 producer")
    assert legacy_calls, "the legacy __dlpack__() was never called"
    gc.collect()


@test
def repeated_calls_reuse_descriptors():
    """The descriptor cache of tessera.gemm: every repeated call computes
    with its own data, bias and the current default context."""
    from tessera import _ops
    _ops._gemm_cache.clear()
    shapes = [(3, 5, 4), (1, 7, 2)]
    for m, k, n in shapes:
        for bias_on, act in ((False, None), (True, None), (True, "relu"), (False, "gelu")):
            for rep in range(3):  # the first call builds, the next two hit the cache
                a, b, bias = rand(m, k), rand(k, n), rand(n)
                want = a.astype(F64) @ b.astype(F64) + (bias if bias_on else 0)
                got = tessera.gemm(a, b, bias=bias if bias_on else None, activation=act)
                close(got, act_ref(want, act), 1e-5, f"{m}x{k}x{n} bias={bias_on} {act} call {rep}")
    assert len(_ops._gemm_cache) == 2 * 4, f"{len(_ops._gemm_cache)} cached descriptors, want 8"
    # a transposed view (another key) and a strided bias (copied, so not kept)
    a, b = rand(5, 3), rand(3, 4)
    for rep in range(2):
        bias = rand(8)[::2]
        close(tessera.gemm(a.T, b, trans_a=True, bias=bias), a.astype(F64) @ b + bias, 1e-5, "strided bias")
    # the default context of the moment, not the one of the first call
    prev = tessera._context._default
    tessera.set_default_context(tessera.Context("cpu", reference_only=True))
    try:
        close(tessera.gemm(a, b), a.astype(F64) @ b, 1e-5, "cached call, reference-only context")
        assert tessera.last_kernel().startswith("gemm.ref"), tessera.last_kernel()
    finally:
        tessera.set_default_context(prev)
    close(tessera.gemm(a, b), a.astype(F64) @ b, 1e-5, "after the context switch")


# ------------------------------------------------------- contexts, errors, info

@test
def contexts_and_errors():
    with tessera.Context("cpu", threads=1) as ctx:
        info = ctx.info()
        assert info["backend"] == "cpu" and info["num_threads"] == 1 and info["arch"], info
        a, b = rand(3, 4), rand(4, 2)
        close(tessera.gemm(a, b, ctx=ctx), a.astype(F64) @ b, 1e-5, "explicit ctx")
        assert tessera.last_kernel().startswith("gemm."), tessera.last_kernel()
    assert "closed" in repr(ctx)
    raises(tessera.InvalidArgumentError, ["context: this Context was closed"], tessera.gemm, rand(2, 2),
           rand(2, 2), ctx=ctx)
    ref = tessera.Context("cpu", reference_only=True, no_tuning_table=True)
    close(tessera.gemm(a, b, ctx=ref), a.astype(F64) @ b, 1e-5, "reference-only ctx")
    assert tessera.last_kernel().startswith("gemm.ref"), tessera.last_kernel()
    raises(tessera.InvalidArgumentError, ["context_create: backend 'tpu' is not one of cpu, cuda, hip, opencl"],
           tessera.Context, "tpu")
    raises(tessera.NoDeviceError, ["context_create: the cpu backend has one device (0), not 1"],
           tessera.Context, "cpu", 1)
    raises(tessera.InvalidArgumentError, ["context_create: num_threads (-1) < 0"], tessera.Context, "cpu",
           threads=-1)
    for gpu in ("cuda", "hip", "opencl"):
        try:
            g = tessera.Context(gpu)
        except tessera.NoDeviceError as e:
            assert e.message.startswith("context_create:"), e.message
            continue
        raises(tessera.WrongContextError, ["NumPy arrays live in host memory"], tessera.gemm, a, b, ctx=g)
    e = raises(tessera.InvalidArgumentError, ["gemm: op(b)"], tessera.gemm, a, a)
    assert isinstance(e, ValueError) and str(e).endswith("[TSR_ERR_INVALID_ARGUMENT]"), str(e)


@test
def layout_check():
    assert L.check_layout() == [], L.check_layout()
    assert L.check_info_layout(tessera.default_context().handle) == []
    for cls in (L.GemmDesc, L.Conv2dDesc, L.AttentionDesc, L.ChainDesc, L.RowwiseDesc, L.ContextOptions):
        print(f"  sizeof {cls.__name__} = {ctypes.sizeof(cls)} (library agrees)")


@test
def module_info():
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "python"))
    r = subprocess.run([sys.executable, "-m", "tessera", "info"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    for frag in (f"tessera {tessera.version()}", "library: ", "ctypes structs: match the library", "cpu:0: ",
                 "ISA features: ", "tuning table: "):
        assert frag in out, f"`python -m tessera info` lacks {frag!r}:\n{out}"
    # the CUDA line either way: "cuda: none (why)" without a GPU, "cuda:0: name, ..." with one
    assert re.search(r"^  cuda(: none \(|:0: )", out, re.M), f"`python -m tessera info` has no cuda line:\n{out}"
    assert "driver driver" not in out, out
    print("  " + out.strip().replace("\n", "\n  "))


def main():
    print(f"python_api: {tessera.library_path} (tessera {tessera.version()}), numpy {np.__version__}, "
          f"{sys.executable}")
    failed = 0
    for t in TESTS:
        try:
            t()
            print(f"PASS {t.__name__}")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAIL {t.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"python_api: {len(TESTS) - failed} of {len(TESTS)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
