#!/usr/bin/python3
"""tessera.torch: the custom operators (torch.ops.tessera.*) against
PyTorch's own kernels, op by op and in two small models built here: an MLP
block and a pre-LN transformer block (attention + layer norm + MLP), on CPU
tensors (and on CUDA tensors when both PyTorch and Tessera have CUDA and a
GPU is present); the wrappers' direct path against the dispatcher, and the
descriptor caches; gradients of every op against PyTorch's. Per-call overhead is measured by
bridges/bench_overhead.py, not here. Exits 77 (meson: skipped) with a SKIP line when torch is absent.
"""

import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print(f"SKIP python_torch: torch not importable by {sys.executable}")
    sys.exit(77)

import tessera  # noqa: E402
import tessera.torch as tt  # noqa: E402

torch.manual_seed(0)
TESTS = []
TOL = {torch.float32: 2e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}


def test(f):
    TESTS.append(f)
    return f


def close(got, want, tol, what):
    got, want = got.double().cpu(), want.double().cpu()
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    err = (got - want).abs()
    bound = tol * (1 + want.abs())
    if not bool((err <= bound).all()):
        i = int(torch.argmax((err - bound).flatten()))
        raise AssertionError(f"{what}: max error {float(err.max()):.3g} (tol {tol}); first bad flat index {i}: "
                             f"got {float(got.flatten()[i])}, want {float(want.flatten()[i])}")


def expect_error(fragments, f, *a, **kw):
    """A TesseraError carrying the library's message; the dispatcher may hand
    it back as itself or wrapped in a RuntimeError with the same text."""
    try:
        f(*a, **kw)
    except (tessera.TesseraError, RuntimeError) as e:
        msg = str(e)
        for frag in fragments:
            assert frag in msg, f"message {msg!r} lacks {frag!r}"
        return
    raise AssertionError("no error was raised")


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


ACTS = {"none": lambda v: v, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": gelu_tanh, "silu": F.silu,
        "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None, align="top_left"):
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
    s = q @ k.transpose(-1, -2) * (scale if scale else 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s + (torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, -math.inf)
                 if mask.dtype == torch.bool else mask.double())
    if causal:
        sq, skv = q.shape[-2], k.shape[-2]
        i = torch.arange(sq)[:, None]
        j = torch.arange(skv)[None, :]
        s = s.masked_fill(~(j <= i if align == "top_left" else j <= i + skv - sq), -math.inf)
    return torch.softmax(s, -1) @ v


# ------------------------------------------------------------------ op by op

@test
def linear_vs_torch():
    for (rows, k, n) in [(1, 1, 1), (7, 13, 5), (33, 64, 17)]:
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x, w, b = torch.randn(rows, k).to(dt), torch.randn(n, k).to(dt), torch.randn(n).to(dt)
            want = F.linear(x.float(), w.float(), b.float())
            for act, f in ACTS.items():
                close(tt.linear(x, w, b, act), f(want), TOL[dt], f"linear {rows}x{k}->{n} {dt} {act}")
    x = torch.randn(2, 3, 7, 12)
    wt = torch.randn(12, 9).t()  # a transposed (column-major) weight: trans flags, no copy
    close(tt.linear(x, wt), F.linear(x, wt), 2e-5, "4-D input, transposed weight")
    close(tt.linear(x[..., ::2, :], wt), F.linear(x[..., ::2, :], wt), 2e-5, "strided rows")
    expect_error(["tessera::linear: weight (9, 11) must be (out_features, 12)"], tt.linear, x, torch.randn(9, 11))
    expect_error(["tessera::linear: x has dtype torch.float64"], tt.linear, x.double(), wt.double())


@test
def direct_calls_and_the_dispatcher():
    """tessera.torch's wrappers call the kernel straight on plain eager
    tensors and go through torch.ops.tessera.* otherwise (a dispatch mode,
    tensors autograd would record); both give the same values, and the
    descriptor cache of linear computes each call with its own data."""
    from tessera import torch as ttm
    ttm._linear_cache.clear()
    for rep in range(3):
        for bias_on in (False, True):
            x, w, b = torch.randn(5, 7), torch.randn(3, 7), torch.randn(3)
            bb = b if bias_on else None
            want = F.linear(x, w, bb)
            close(tt.linear(x, w, bb), want, 2e-5, f"linear call {rep} bias={bias_on}")
            close(torch.ops.tessera.linear(x, w, bb, "none"), want, 2e-5, f"torch.ops.tessera.linear {rep}")
    assert len(ttm._linear_cache) == 2, f"{len(ttm._linear_cache)} cached linear descriptors, want 2"
    ttm._norm_cache.clear()
    for rep in range(3):
        x, g, b = torch.randn(3, 5, 8), torch.randn(8), torch.randn(8)
        close(tt.layer_norm(x, (8,), g, b), F.layer_norm(x, (8,), g, b), 1e-5, f"layer_norm call {rep}")
        close(tt.rms_norm(x, (8,), g, 1e-6), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g, 1e-5,
              f"rms_norm call {rep}")
        xs = torch.randn(3, 5, 16)[..., ::2]  # copied to rows: computed right, not kept
        close(tt.layer_norm(xs, (8,), g, b), F.layer_norm(xs, (8,), g, b), 1e-5, f"strided layer_norm {rep}")
    assert len(ttm._norm_cache) == 2, f"{len(ttm._norm_cache)} cached norm descriptors, want 2"
    ttm._conv_cache.clear()
    ttm._sdpa_cache.clear()
    for rep in range(3):
        x, w, b = torch.randn(2, 3, 7, 6), torch.randn(4, 3, 3, 3), torch.randn(4)
        close(tt.conv2d(x, w, b, padding=1), F.conv2d(x, w, b, padding=1), 1e-4, f"conv2d NCHW call {rep}")
        xcl = x.contiguous(memory_format=torch.channels_last)
        wcl = w.contiguous(memory_format=torch.channels_last)
        close(tt.conv2d(xcl, wcl, None, stride=2), F.conv2d(x, w, None, stride=2), 1e-4,
              f"conv2d channels_last call {rep}")
        close(tt.conv2d(x.permute(0, 2, 3, 1).contiguous(), w.permute(0, 2, 3, 1).contiguous(), b, layout="NHWC"),
              F.conv2d(x, w, b).permute(0, 2, 3, 1), 1e-4, f"conv2d NHWC call {rep}")
        q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
        close(tt.scaled_dot_product_attention(q, k, v, is_causal=True, causal_align="bottom_right"),
              sdpa_ref(q, k, v, causal=True, align="bottom_right"), 1e-4, f"sdpa call {rep}")
        close(tt.scaled_dot_product_attention(q[0], k[0], v[0]), sdpa_ref(q[:1], k[:1], v[:1])[0], 1e-4,
              f"sdpa 3-D call {rep}")
    assert len(ttm._conv_cache) == 3 and len(ttm._sdpa_cache) == 2, (len(ttm._conv_cache), len(ttm._sdpa_cache))
    x, w = torch.randn(4, 6), torch.randn(2, 6)
    close(tt.linear(x, w.t().contiguous().t()), F.linear(x, w), 2e-5, "column-major weight (another key)")
    bs = torch.randn(4)[::2]  # a strided bias is copied: computed right, not cached
    close(tt.linear(x, w, bs), F.linear(x, w, bs), 2e-5, "strided bias")
    close(tt.linear(x, w, bs), F.linear(x, w, bs), 2e-5, "strided bias, again")
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        print("  SKIP dispatch-mode check: no TorchDispatchMode in this torch")
        return
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Record():
        close(tt.linear(x, w), F.linear(x, w), 2e-5, "linear under a dispatch mode")
        tt.layer_norm(x, (6,))
    assert any("tessera.linear" in s for s in seen) and any("tessera.layer_norm" in s for s in seen), \
        f"under a dispatch mode the ops must go through the dispatcher; the mode saw {seen}"
    with torch.no_grad():
        seen.clear()
        tt.linear(x, w)
    assert not seen, seen
    xg = x.clone().requires_grad_()
    direct = ttm._direct(xg, w)
    with torch.no_grad():
        assert ttm._direct(xg, w), "under no_grad a requires_grad tensor needs no autograd record"
    assert not direct, "with grad enabled a requires_grad input must go through the dispatcher"


@test
def conv2d_vs_torch():
    for (n, c, h, w, k, r, s, stride, pad, dil, groups) in [(1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1),
                                                          (2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1),
                                                          (1, 6, 11, 13, 6, 3, 3, 2, 1, 1, 3),
                                                          (1, 8, 8, 8, 8, 3, 3, 1, 2, 2, 8)]:
        x, wt, b = torch.randn(n, c, h, w), torch.randn(k, c // groups, r, s), torch.randn(k)
        want = F.conv2d(x, wt, b, stride, pad, dil, groups)
        close(tt.conv2d(x, wt, b, stride, pad, dil, groups), want, 2e-5, f"conv NCHW {tuple(x.shape)}")
        xcl = x.contiguous(memory_format=torch.channels_last)
        got = tt.conv2d(xcl, wt, b, stride, pad, dil, groups, activation="relu")
        close(got, F.relu(want), 2e-5, "conv channels_last")
        got = tt.conv2d(x.permute(0, 2, 3, 1).contiguous(), wt.permute(0, 2, 3, 1).contiguous(), b, stride,
                        pad, dil, groups, layout="NHWC")
        close(got, want.permute(0, 2, 3, 1), 2e-5, "conv NHWC")


@test
def attention_vs_torch():
    for (B, Hq, Hkv, Sq, Skv, D) in [(1, 1, 1, 1, 1, 8), (2, 4, 2, 7, 13, 16), (1, 8, 1, 5, 5, 32)]:
        q, k, v = torch.randn(B, Hq, Sq, D), torch.randn(B, Hkv, Skv, D), torch.randn(B, Hkv, Skv, D)
        for causal, align in ((False, "top_left"), (True, "top_left"), (True, "bottom_right")):
            got = tt.scaled_dot_product_attention(q, k, v, is_causal=causal, causal_align=align)
            close(got, sdpa_ref(q, k, v, causal=causal, align=align), 2e-5, f"sdpa {causal} {align}")
        mask = torch.rand(Sq, Skv) > 0.3
        mask[:, 0] = True
        close(tt.scaled_dot_product_attention(q, k, v, attn_mask=mask), sdpa_ref(q, k, v, mask=mask), 2e-5,
              "bool mask")
        close(tt.scaled_dot_product_attention(q, k, v, scale=0.2), sdpa_ref(q, k, v, scale=0.2), 2e-5,
              "explicit scale")
        if Hq == Hkv and hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
            close(tt.scaled_dot_product_attention(q, k, v, is_causal=True),
                  F.scaled_dot_product_attention(q, k, v, is_causal=True), 2e-5, "vs F.scaled_dot_product_attention")


@test
def norms_vs_torch():
    for shape in [(1, 1), (3, 17), (2, 5, 64)]:
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(*shape).to(dt)
            d = shape[-1]
            w, b = torch.randn(d), torch.randn(d)
            want = F.layer_norm(x.float(), (d,), w, b, 1e-5)
            close(tt.layer_norm(x, (d,), w, b), want, TOL[dt], f"layer_norm {shape} {dt}")
            xf = x.double()
            want = xf / torch.sqrt((xf ** 2).mean(-1, keepdim=True) + 1e-6) * w.double()
            close(tt.rms_norm(x, (d,), w, eps=1e-6), want, TOL[dt], f"rms_norm {shape} {dt}")
    x = torch.randn(4, 6, 8)
    close(tt.layer_norm(x, (6, 8)), F.layer_norm(x, (6, 8)), 2e-5, "layer_norm over 2 trailing dims")
    expect_error(["tessera::layer_norm: normalized_shape [5] is not the trailing shape"], tt.layer_norm, x, 5)


# ------------------------------------------------------------------ models

class MLP(torch.nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))

    def tessera(self, x):
        return tt.linear(tt.linear(x, self.fc1.weight, self.fc1.bias, "gelu"), self.fc2.weight, self.fc2.bias)


class Block(torch.nn.Module):
    """Pre-LN transformer block: x + attn(ln1(x)); then + mlp(ln2(.)). GQA:
    n_kv heads for keys/values."""

    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, (heads + 2 * kv_heads) * self.hd)
        self.proj = torch.nn.Linear(d, d)
        self.mlp = MLP(d, 4 * d)
        for ln in (self.ln1, self.ln2):  # non-trivial affine parameters
            torch.nn.init.normal_(ln.weight, 1.0, 0.2)
            torch.nn.init.normal_(ln.bias, 0.0, 0.2)

    def _split(self, qkv, B, S):
        q, k, v = qkv.split([self.h * self.hd, self.kvh * self.hd, self.kvh * self.hd], dim=-1)
        return (q.reshape(B, S, self.h, self.hd).transpose(1, 2), k.reshape(B, S, self.kvh, self.hd).transpose(1, 2),
                v.reshape(B, S, self.kvh, self.hd).transpose(1, 2))

    def forward(self, x):  # PyTorch's own kernels
        B, S, d = x.shape
        q, k, v = self._split(self.qkv(self.ln1(x)), B, S)
        g = self.h // self.kvh
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.hd)
                            + torch.full((S, S), -math.inf, device=x.device).triu(1), -1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(B, S, d))
        return x + self.mlp(self.ln2(x))

    def tessera(self, x):  # the same block through torch.ops.tessera
        B, S, d = x.shape
        h = tt.layer_norm(x, (d,), self.ln1.weight, self.ln1.bias)
        q, k, v = self._split(tt.linear(h, self.qkv.weight, self.qkv.bias), B, S)  # strided head views
        att = tt.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + tt.linear(att.transpose(1, 2).reshape(B, S, d), self.proj.weight, self.proj.bias)
        return x + self.mlp.tessera(tt.layer_norm(x, (d,), self.ln2.weight, self.ln2.bias))


@test
def mlp_block():
    m = MLP(48, 192).eval()
    x = torch.randn(3, 11, 48)
    with torch.no_grad():
        close(m.tessera(x), m(x), 1e-4, "MLP block f32")
        mb = MLP(48, 192).eval().to(torch.bfloat16)
        xb = x.to(torch.bfloat16)
        close(mb.tessera(xb), mb(xb), 1e-1, "MLP block bf16")


@test
def transformer_block():
    blk = Block(64, 8, 2).eval()
    x = torch.randn(2, 13, 64)
    with torch.no_grad():
        close(blk.tessera(x), blk(x), 2e-4, "transformer block f32 (GQA 8/2, causal)")


def grads(f, inputs, seed_out=None):
    """d(sum(f() * r))/d(inputs) for a fixed random r (so every output matters)."""
    y = f()
    r = seed_out if seed_out is not None else torch.randn(y.shape, generator=torch.Generator().manual_seed(7))
    return torch.autograd.grad((y.float() * r).sum(), inputs, allow_unused=True), r


@test
def autograd():
    """Gradients through the wrappers and through torch.ops.tessera.*
    against PyTorch's own ops; linear's backward runs on Tessera."""
    torch.manual_seed(3)
    for act, f in ACTS.items():
        x = torch.randn(2, 5, 7, requires_grad=True)
        w, b = torch.randn(4, 7, requires_grad=True), torch.randn(4, requires_grad=True)
        ref, r = grads(lambda: f(F.linear(x, w, b)), (x, w, b))
        for label, call in (("tessera.torch.linear", lambda: tt.linear(x, w, b, act)),
                            ("torch.ops.tessera.linear", lambda: torch.ops.tessera.linear(x, w, b, act))):
            got, _ = grads(call, (x, w, b), r)
            for name, g, want in zip("xwb", got, ref):
                close(g, want, 1e-4, f"{label} {act}: d{name}")
    tessera.set_default_context(tessera.Context("cpu"))  # a fresh context: last_kernel of this thread
    x = torch.randn(6, 7, requires_grad=True)
    w = torch.randn(3, 7)  # no gradient for w: only dx is computed
    gx, = torch.autograd.grad(tt.linear(x, w).sum(), (x,))
    assert tessera.last_kernel().startswith("gemm."), tessera.last_kernel()
    close(gx, torch.ones(6, 3) @ w, 1e-5, "dx only")
    # conv2d: padding, stride, dilation, groups, both layouts, fused relu
    x = torch.randn(2, 4, 9, 8, requires_grad=True)
    w, b = torch.randn(6, 2, 3, 3, requires_grad=True), torch.randn(6, requires_grad=True)
    ref, r = grads(lambda: F.relu(F.conv2d(F.pad(x, (0, 3, 2, 1)), w, b, 2, 0, 1, 2)), (x, w, b))
    got, _ = grads(lambda: tt.conv2d(x, w, b, stride=2, padding=(2, 1, 0, 3), groups=2, activation="relu"),
                   (x, w, b), r)
    for name, g, want in zip("xwb", got, ref):
        close(g, want, 1e-4, f"conv2d NCHW: d{name}")
    xh = x.detach().permute(0, 2, 3, 1).contiguous().requires_grad_()
    wh = w.detach().permute(0, 2, 3, 1).contiguous().requires_grad_()
    ref, r = grads(lambda: F.conv2d(xh.permute(0, 3, 1, 2), wh.permute(0, 3, 1, 2), None, 1, 1, 2, 2)
                   .permute(0, 2, 3, 1), (xh, wh))
    got, _ = grads(lambda: tt.conv2d(xh, wh, None, padding=1, dilation=2, groups=2, layout="NHWC"), (xh, wh), r)
    for name, g, want in zip("xw", got, ref):
        close(g, want, 1e-4, f"conv2d NHWC: d{name}")
    # attention: GQA, both causal alignments, a boolean mask
    q = torch.randn(2, 4, 5, 8, requires_grad=True)
    k, v = torch.randn(2, 2, 7, 8, requires_grad=True), torch.randn(2, 2, 7, 8, requires_grad=True)
    mask = torch.rand(5, 7) > 0.2
    mask[:, 0] = True  # no fully masked row: its gradient is zero by convention only
    for align in ("top_left", "bottom_right"):
        ref, r = grads(lambda: sdpa_ref(q, k, v, mask, True, 0.3, align), (q, k, v))
        got, _ = grads(lambda: tt.scaled_dot_product_attention(q, k, v, mask, True, 0.3, align), (q, k, v), r)
        for name, g, want in zip("qkv", got, ref):
            close(g, want, 1e-4, f"sdpa {align}: d{name}")
    # the norms
    x = torch.randn(3, 4, 16, requires_grad=True)
    g_, b_ = torch.randn(16, requires_grad=True), torch.randn(16, requires_grad=True)
    ref, r = grads(lambda: F.layer_norm(x, (16,), g_, b_), (x, g_, b_))
    got, _ = grads(lambda: torch.ops.tessera.layer_norm(x, [16], g_, b_, 1e-5), (x, g_, b_), r)
    for name, g, want in zip(["x", "weight", "bias"], got, ref):
        close(g, want, 1e-4, f"layer_norm: d{name}")
    ref, r = grads(lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g_, (x, g_))
    got, _ = grads(lambda: tt.rms_norm(x, 16, g_, 1e-6), (x, g_), r)
    for name, g, want in zip(["x", "weight"], got, ref):
        close(g, want, 1e-4, f"rms_norm: d{name}")
    # one training step of the MLP block: the same parameter gradients
    m = MLP(24, 48)
    xb = torch.randn(4, 3, 24)
    want = torch.autograd.grad(m(xb).pow(2).sum(), list(m.parameters()))
    got = torch.autograd.grad(m.tessera(xb).pow(2).sum(), list(m.parameters()))
    for (name, _), g, w_ in zip(m.named_parameters(), got, want):
        close(g, w_, 1e-3, f"MLP block: d{name}")


@test
def cuda_tensors():
    if not torch.cuda.is_available():
        print("  SKIP python_torch/cuda: torch sees no CUDA device")
        return
    try:
        tessera.Context("cuda")
    except tessera.NoDeviceError as e:
        print(f"  SKIP python_torch/cuda: {e.message}")
        return
    dev = torch.device("cuda")
    x, w, b = torch.randn(33, 64, device=dev), torch.randn(17, 64, device=dev), torch.randn(17, device=dev)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # runs on the current (non-default) stream
        got = tt.linear(x, w, b, "relu")
    s.synchronize()
    close(got, F.relu(F.linear(x, w, b)), 1e-4, "linear on CUDA, side stream")
    blk = Block(64, 8, 2).eval().to(dev)
    xx = torch.randn(2, 13, 64, device=dev)
    with torch.no_grad():
        close(blk.tessera(xx), blk(xx), 2e-3, "transformer block on CUDA")


def main():
    print(f"python_torch: torch {torch.__version__} (ops registered via {tt.REGISTRATION}), "
          f"{tessera.library_path}")
    failed = 0
    for t in TESTS:
        try:
            t()
            print(f"PASS {t.__name__}")
        except Exception:  # noqa: BLE001
            failed += 1
            print(f"FAIL {t.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"python_torch: {len(TESTS) - failed} of {len(TESTS)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
