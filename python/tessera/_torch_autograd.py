"""Backward formulas for the tessera.torch operators (torch.autograd).

linear's backward runs on Tessera: two GEMMs through tessera::linear itself
(dx = dz W, dW = dz^T x; db = the column sums of dz), after recomputing the
pre-activation z when an activation was fused (its derivative comes from
PyTorch's own activation). Tessera has no backward kernels for the others,
so conv2d, scaled_dot_product_attention, layer_norm and rms_norm
differentiate a recomputation of the forward in PyTorch's ops (the same
definitions the tests check the forward against): correct gradients,
PyTorch's speed.

Every forward here runs torch.ops.tessera.<op> below the Autograd key, so
the kernel (CPU, CUDA, or the fake/Meta one while tracing) is the same one
a no-grad call gets.
"""

import contextlib
import math

import torch
import torch.nn.functional as F

_Guard = torch._C._AutoDispatchBelowAutograd


@contextlib.contextmanager
def _below():
    """Dispatch below the Autograd key for the block (torch 1.13's guard is
    an RAII object, not a context manager: it holds while it is alive)."""
    guard = _Guard()
    try:
        yield
    finally:
        del guard

_ACT = {
    "none": None,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_erf": F.gelu,
    "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


def _op(name, *args):
    with _below():
        return getattr(torch.ops.tessera, name)(*args)


def needs_grad(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


# ------------------------------------------------------------------ linear

def _save_linear(ctx, inputs, output):
    x, weight, bias, activation = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.activation = activation.lower()


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, activation):
        _save_linear(ctx, (x, weight, bias, activation), None)
        return _op("linear", x, weight, bias, activation)

    @staticmethod
    def backward(ctx, gy):
        x, w, b = ctx.saved_tensors
        act = _ACT.get(ctx.activation)
        gz = gy.to(x.dtype)
        if act is not None:  # dz = act'(z) dy, z recomputed by Tessera
            z = _op("linear", x, w, b, "none")
            with torch.enable_grad():
                zz = z.detach().requires_grad_()
                gz = torch.autograd.grad(act(zz), zz, gy)[0].to(x.dtype)
        n, k = w.shape
        gz2 = gz.reshape(-1, n)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:  # dx = dz W = linear(dz, W^T): W^T is a view (a trans flag)
            gx = _op("linear", gz, w.t(), None, "none")
        if ctx.needs_input_grad[1]:  # dW = dz^T x = linear(dz^T, x^T)
            gw = _op("linear", gz2.t(), x.reshape(-1, k).t(), None, "none").to(w.dtype)
        if b is not None and ctx.needs_input_grad[2]:
            gb = gz2.float().sum(0).to(b.dtype)
        return gx, gw, gb, None


# ---------------------------------------------- the others: recomputation

def _conv2d_ref(x, weight, bias, stride, padding, dilation, groups, layout, activation):
    nhwc = layout.upper() == "NHWC"
    if nhwc:
        x, weight = x.permute(0, 3, 1, 2), weight.permute(0, 3, 1, 2)
    top, bottom, left, right = padding
    y = F.conv2d(F.pad(x, (left, right, top, bottom)), weight, bias, tuple(stride), 0, tuple(dilation), groups)
    act = _ACT.get(activation.lower())
    if act is not None:
        y = act(y)
    return y.permute(0, 2, 3, 1) if nhwc else y


def _sdpa_ref(q, k, v, attn_mask, is_causal, scale, causal_align):
    g = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
    s = (q @ k.transpose(-1, -2)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if attn_mask is not None:
        s = s + (torch.zeros(attn_mask.shape, dtype=s.dtype, device=s.device).masked_fill(~attn_mask, -math.inf)
                 if attn_mask.dtype == torch.bool else attn_mask.to(s.dtype))
    if is_causal:
        sq, skv = q.shape[-2], k.shape[-2]
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(skv, device=q.device)[None, :]
        allowed = j <= i if causal_align == "top_left" else j <= i + (skv - sq)
        s = s.masked_fill(~allowed, -math.inf)
    p = torch.softmax(s, -1).nan_to_num(0.0)  # fully masked rows give 0, as Tessera's forward
    return p @ v


def _layer_norm_ref(x, normalized_shape, weight, bias, eps):
    return F.layer_norm(x, tuple(normalized_shape), weight, bias, eps)


def _rms_norm_ref(x, normalized_shape, weight, eps):
    dims = tuple(range(-len(normalized_shape), 0))
    e = eps if eps is not None else torch.finfo(x.dtype).eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + e)
    return y * weight.reshape(tuple(normalized_shape)) if weight is not None else y


_REFS = {"conv2d": _conv2d_ref, "scaled_dot_product_attention": _sdpa_ref, "layer_norm": _layer_norm_ref,
         "rms_norm": _rms_norm_ref}


class RecomputeFn(torch.autograd.Function):
    """Forward: Tessera's kernel. Backward: autograd of _REFS[name] on the
    saved inputs."""

    @staticmethod
    def forward(ctx, name, *args):
        _save_recompute(ctx, name, args)
        return _op(name, *args)

    @staticmethod
    def backward(ctx, gy):
        return (None, *_recompute_grads(ctx, gy, ctx.needs_input_grad[1:]))


def _recompute_grads(ctx, gy, needs):
    """The gradients of the op's inputs (needs: which want one), from
    autograd of _REFS[ctx.name] on the saved ones."""
    saved = iter(ctx.saved_tensors)
    args, leaves = [], []
    with torch.enable_grad():
        for i, (t, other) in enumerate(zip(ctx.is_tensor, ctx.other)):
            if not t:
                args.append(other)
                continue
            a = next(saved).detach()
            if needs[i] and a.is_floating_point():
                a.requires_grad_()
                leaves.append((i, a))
            args.append(a)
        out = _REFS[ctx.name](*args)
        got = torch.autograd.grad(out, [a for _, a in leaves], gy.to(out.dtype), allow_unused=True)
    grads = [None] * len(args)
    for (i, a), g in zip(leaves, got):
        grads[i] = g.to(a.dtype) if g is not None else None
    return grads


def _save_recompute(ctx, name, args):
    ctx.name = name
    ctx.is_tensor = [isinstance(a, torch.Tensor) for a in args]
    ctx.other = [None if t else a for a, t in zip(args, ctx.is_tensor)]
    ctx.save_for_backward(*[a for a, t in zip(args, ctx.is_tensor) if t])


def apply(name, *args):
    """torch.ops.tessera.<name>(*args) with autograd."""
    if name == "linear":
        return LinearFn.apply(*args)
    return RecomputeFn.apply(name, *args)


def register(name, op):
    """The same formulas for torch.library.custom_op's op (torch >= 2.4),
    whose autograd calls the kernel below the Autograd key itself."""
    if name == "linear":
        op.register_autograd(LinearFn.backward, setup_context=_save_linear)
        return

    def setup(ctx, inputs, output):
        _save_recompute(ctx, name, inputs)

    def backward(ctx, gy):
        return tuple(_recompute_grads(ctx, gy, ctx.needs_input_grad))
    op.register_autograd(backward, setup_context=setup)
