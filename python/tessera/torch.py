"""Tessera kernels as PyTorch custom operators.

    import tessera.torch as tt
    y = tt.linear(x, w, b, activation="gelu")       # = torch.ops.tessera.linear
    y = tt.conv2d(x, w, b, stride=2, padding=1)     # NCHW (channels_last kept), or layout="NHWC"
    o = tt.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = tt.layer_norm(x, (d,), w, b); y = tt.rms_norm(x, (d,), w)

Importing this module registers, in the "tessera" namespace of
torch.library: linear, conv2d, scaled_dot_product_attention, layer_norm and
rms_norm, with kernels for CPU tensors and for CUDA tensors (when Tessera's
CUDA backend is built and a GPU is present; a CUDA call runs on
torch.cuda.current_stream() through a Context per (device, stream)), plus
shape-only ("fake"/Meta) kernels for tracing. torch >= 2.4 registers through
torch.library.custom_op; older versions (1.13 ...) through
torch.library.Library + impl.

Autograd (tessera/_torch_autograd.py): the wrappers below record a
backward when an input needs a gradient, on every torch version, and so
does torch.ops.tessera.* (torch >= 2.4: the same formulas given to
torch.library.custom_op's register_autograd; 1.13 ...: an Autograd-key
kernel on the Library path). linear's backward runs on Tessera's GEMM; the others
differentiate a recomputation in PyTorch's ops (Tessera has no backward
kernels).

Tensors are passed by pointer and strides: transposed weights, padded rows,
channels_last activations and heads sliced out of a packed projection are
used in place; only layouts the C ABI cannot express are copied.

Per-call cost: the wrappers below call the kernels directly on plain eager
tensors (torch.ops.tessera.* goes through torch's dispatcher), and a call
whose shapes, strides, dtypes and options were seen before reuses the
descriptor prepared then (bridges/bench_overhead.py measures both).
"""

import ctypes
import math
import threading

import torch

from . import _context
from . import _lib as L
from . import _torch_autograd as _ad
from ._context import Context, default_context

__all__ = ["linear", "conv2d", "scaled_dot_product_attention", "layer_norm", "rms_norm", "REGISTRATION"]

_DT = {torch.float32: L.F32, torch.float16: L.F16, torch.bfloat16: L.BF16}

# ---------------------------------------------------------------- plumbing

_ctx_lock = threading.Lock()
_gpu_ctxs = {}


def _handle(t, who):
    """The context handle for t's device: the default CPU context, or a CUDA
    context bound to (device, torch's current stream on it)."""
    dev = t.device
    if dev.type == "cpu":
        return default_context().handle
    if dev.type == "cuda":
        if getattr(torch.version, "hip", None):
            L.fail(L.ERR_NOT_SUPPORTED, f"{who}: ROCm tensors are not supported by tessera.torch yet (the HIP "
                   "backend takes hipStream_t; use CPU or CUDA tensors)")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        stream = torch.cuda.current_stream(idx).cuda_stream
        # 0 is the legacy default stream; NULL would give Tessera its own
        # stream, so pass cudaStreamLegacy (0x1) to stay ordered with torch.
        handle = stream if stream else 1
        key = (idx, handle)
        ctx = _gpu_ctxs.get(key)
        if ctx is None:
            with _ctx_lock:
                ctx = _gpu_ctxs.get(key)
                if ctx is None:
                    ctx = Context("cuda", idx, stream=handle)
                    _gpu_ctxs[key] = ctx
        return ctx.handle
    L.fail(L.ERR_NOT_SUPPORTED, f"{who}: tensors on {dev} are not supported (cpu and cuda are)")


def _code(t, name, who):
    c = _DT.get(t.dtype)
    if c is None:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: {name} has dtype {t.dtype}; Tessera's torch ops take float32, "
               "float16 or bfloat16")
    return c


def _same_device(who, ref, **tensors):
    for name, t in tensors.items():
        if t is not None and t.device != ref.device:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} is on {t.device} but the input is on {ref.device}")


def _vec(v, n, name, who, out_code):
    """bias/gamma/beta as a contiguous vector of n: f32, or the output's dtype when allowed."""
    if v.numel() != n:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} has {v.numel()} elements; it must have {n}")
    v = v.reshape(n)
    code = _DT.get(v.dtype)
    if code is None or (code != L.F32 and code != out_code):
        v, code = v.float(), L.F32
    return v.contiguous(), code


def _activation(name, who):
    code = L.ACTIVATIONS.get(name.lower() if isinstance(name, str) else name, -1)
    if code == -1:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: activation {name!r} is not one of "
               + ", ".join(k for k in L.ACTIVATIONS if isinstance(k, str)))
    return code


def _epi_step(ep, op, activation=0, data=0, dtype=L.F32, scale=1.0):
    s = ep.steps[ep.num_steps]
    s.op, s.activation, s.data, s.dtype, s.scale = op, activation, data, dtype, scale
    ep.num_steps += 1


_byref = ctypes.byref


# ----------------------------------------------------------------- kernels

# Prepared GEMM descriptors of linear, by everything that shapes them (shapes,
# strides, dtypes, devices, bias layout, activation): a repeated call (every
# step of a model) skips the checks and the descriptor build and costs one
# dict lookup, torch.empty and the ctypes call. Only calls that needed no
# copy and no conversion are kept. A template is never written after it is
# stored (a call with a bias copies it first), so threads may share it.
_linear_cache = {}
_LINEAR_CACHE_MAX = 256
_tsr_gemm = L.lib.tsr_gemm
_GemmDesc = L.GemmDesc
_BIAS_DATA_OFF = (L.GemmDesc.epilogue.offset + L.Epilogue.steps.offset + L.EpilogueStep.data.offset)
_addressof = ctypes.addressof
_c_void_p = ctypes.c_void_p


def _linear_key(x, weight, bias, activation):
    return (x.shape, x.stride(), x.dtype, x.device, weight.shape, weight.stride(), weight.dtype, weight.device,
            None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device), activation)


def _linear_impl(x, weight, bias, activation):
    key = _linear_key(x, weight, bias, activation)
    ent = _linear_cache.get(key)
    if ent is None:
        return _linear_prepare(x, weight, bias, activation, key)
    tpl, out_shape = ent
    h = _cpu_handle(x, "tessera::linear")
    y = x.new_empty(out_shape)
    if bias is None:
        da = _addressof(tpl)
    else:
        d = _GemmDesc.from_buffer_copy(tpl)
        da = _addressof(d)
        _c_void_p.from_address(da + _BIAS_DATA_OFF).value = bias.data_ptr()
    st = _tsr_gemm(h, da, x.data_ptr(), weight.data_ptr(), y.data_ptr())
    if st:
        L.check(st)
    return y


def _linear_prepare(x, weight, bias, activation, key):
    who = "tessera::linear"
    h = _handle(x, who)
    _same_device(who, x, weight=weight, bias=bias)
    xc, wc = _code(x, "x", who), _code(weight, "weight", who)
    if xc != wc:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: x is {x.dtype} but weight is {weight.dtype}")
    if weight.dim() != 2 or x.dim() < 1 or weight.shape[1] != x.shape[-1]:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: weight {tuple(weight.shape)} must be (out_features, "
               f"{x.shape[-1] if x.dim() else '?'}) for x {tuple(x.shape)}")
    k = x.shape[-1]
    n = weight.shape[0]
    x2 = x.reshape(math.prod(x.shape[:-1]), k)
    m = x2.shape[0]
    if (k > 1 and x2.stride(1) != 1) or (m > 1 and x2.stride(0) < k):
        x2 = x2.contiguous()
    lda = x2.stride(0) if m > 1 else max(k, 1)
    # weight (n x k) is B^T: row-major weight = column-major B (trans_b)
    w = weight
    if (k <= 1 or w.stride(1) == 1) and (n <= 1 or w.stride(0) >= k):
        trans_b, ldb = L.TRANS, (w.stride(0) if n > 1 else max(k, 1))
    elif (n <= 1 or w.stride(0) == 1) and (k <= 1 or w.stride(1) >= n):
        trans_b, ldb = L.NO_TRANS, (w.stride(1) if k > 1 else max(n, 1))
    else:
        w = w.contiguous()
        trans_b, ldb = L.TRANS, max(k, 1)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    d = L.GemmDesc()
    L.lib.tsr_gemm_desc_init(_byref(d))
    d.trans_b = trans_b
    d.m, d.n, d.k = m, n, k
    d.a_dtype = d.b_dtype = d.c_dtype = xc
    d.lda, d.ldb, d.ldc = lda, ldb, max(n, 1)
    keep = []
    if bias is not None:
        b, bc = _vec(bias, n, "bias", who, xc)
        keep.append(b)
        _epi_step(d.epilogue, L.EPI_BIAS, data=b.data_ptr(), dtype=bc)
    act = _activation(activation, who)
    if act:
        _epi_step(d.epilogue, L.EPI_ACTIVATION, activation=act)
    L.check(L.lib.tsr_gemm(h, ctypes.addressof(d), x2.data_ptr(), w.data_ptr(), y.data_ptr()))
    # cacheable when the operands were used as they are (no copy, no float())
    if x2.data_ptr() == x.data_ptr() and w is weight and (bias is None or keep[0].data_ptr() == bias.data_ptr()):
        if len(_linear_cache) >= _LINEAR_CACHE_MAX:
            _linear_cache.clear()
        _linear_cache[key] = (d, (*x.shape[:-1], n))
    return y.reshape(*x.shape[:-1], n)


def _conv_out(size, pad0, pad1, dil, f, stride):
    return (size + pad0 + pad1 - dil * (f - 1) - 1) // stride + 1


# Prepared conv2d descriptors, as for linear (a call with a bias patches its
# pointer into a copy of the template).
_conv_cache = {}
_tsr_conv2d = L.lib.tsr_conv2d
_Conv2dDesc = L.Conv2dDesc
_CONV_BIAS_DATA_OFF = (L.Conv2dDesc.epilogue.offset + L.Epilogue.steps.offset + L.EpilogueStep.data.offset)


def _cpu_handle(t, who):
    """_handle with the default CPU context's handle read straight off it."""
    dflt = _context._default
    h = dflt._h if dflt is not None and t.device.type == "cpu" else None
    return h if h else _handle(t, who)


def _conv2d_impl(x, weight, bias, stride, padding, dilation, groups, layout, activation):
    key = (_tlayout(x), _tlayout(weight), _tlayout(bias), tuple(stride), tuple(padding), tuple(dilation), groups,
           layout, activation)
    ent = _conv_cache.get(key)
    if ent is None:
        return _conv2d_prepare(x, weight, bias, stride, padding, dilation, groups, layout, activation, key)
    tpl, out_shape, channels_last = ent
    h = _cpu_handle(x, "tessera::conv2d")
    y = x.new_empty(out_shape)
    if bias is None:
        da = _addressof(tpl)
    else:
        dc = _Conv2dDesc.from_buffer_copy(tpl)
        da = _addressof(dc)
        _c_void_p.from_address(da + _CONV_BIAS_DATA_OFF).value = bias.data_ptr()
    st = _tsr_conv2d(h, da, x.data_ptr(), weight.data_ptr(), y.data_ptr())
    if st:
        L.check(st)
    return y.permute(0, 3, 1, 2) if channels_last else y


def _conv2d_prepare(x, weight, bias, stride, padding, dilation, groups, layout, activation, key):
    who = "tessera::conv2d"
    h = _handle(x, who)
    _same_device(who, x, weight=weight, bias=bias)
    xc, wc = _code(x, "x", who), _code(weight, "weight", who)
    if xc != wc:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: x is {x.dtype} but weight is {weight.dtype}")
    if x.dim() != 4 or weight.dim() != 4:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: x {tuple(x.shape)} and weight {tuple(weight.shape)} must be 4-D")
    lay = layout.upper()
    if lay == "NCHW":
        n, c, hh, ww = x.shape
        k, cg, r, s = weight.shape
        channels_last = (x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous())
        if channels_last:  # run NHWC on the same memory, return channels_last like PyTorch
            xin = x.permute(0, 2, 3, 1)
            win = weight.permute(0, 2, 3, 1).contiguous()
            fmt, ff = L.NHWC, L.FILTER_OHWI
        else:
            xin, win = x.contiguous(), weight.contiguous()
            fmt, ff = L.NCHW, L.FILTER_OIHW
    elif lay == "NHWC":
        n, hh, ww, c = x.shape
        k, r, s, cg = weight.shape
        xin, win = x.contiguous(), weight.contiguous()
        fmt, ff, channels_last = L.NHWC, L.FILTER_OHWI, False
    else:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: layout {layout!r} is not 'NCHW' or 'NHWC'")
    if cg * groups != c:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: weight {tuple(weight.shape)} has {cg} input channels per group "
               f"but x has {c} channels in {groups} group(s)")
    if len(padding) != 4 or len(stride) != 2 or len(dilation) != 2:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: stride {list(stride)} and dilation {list(dilation)} take 2 values, "
               f"padding {list(padding)} 4 (top, bottom, left, right)")
    d = L.Conv2dDesc()
    L.lib.tsr_conv2d_desc_init(_byref(d))
    d.format, d.filter_format = fmt, ff
    d.n, d.c, d.h, d.w, d.k, d.r, d.s = n, c, hh, ww, k, r, s
    d.stride_h, d.stride_w = stride
    d.pad_top, d.pad_bottom, d.pad_left, d.pad_right = padding
    d.dilation_h, d.dilation_w = dilation
    d.groups = groups
    d.x_dtype = d.w_dtype = d.y_dtype = xc
    p, q = ctypes.c_int64(), ctypes.c_int64()
    L.check(L.lib.tsr_conv2d_output_shape(_byref(d), _byref(p), _byref(q)))
    p, q = p.value, q.value
    keep = []
    if bias is not None:
        b, bc = _vec(bias, k, "bias", who, xc)
        keep.append(b)
        _epi_step(d.epilogue, L.EPI_BIAS, data=b.data_ptr(), dtype=bc)
    act = _activation(activation, who)
    if act:
        _epi_step(d.epilogue, L.EPI_ACTIVATION, activation=act)
    if fmt == L.NHWC:
        y = torch.empty((n, p, q, k), dtype=x.dtype, device=x.device)
    else:
        y = torch.empty((n, k, p, q), dtype=x.dtype, device=x.device)
    L.check(L.lib.tsr_conv2d(h, _byref(d), xin.data_ptr(), win.data_ptr(), y.data_ptr()))
    # kept when x, weight and bias were used as they are (no reorder, no copy)
    if (xin.data_ptr() == x.data_ptr() and win.data_ptr() == weight.data_ptr()
            and (bias is None or keep[0].data_ptr() == bias.data_ptr())):
        if len(_conv_cache) >= _LINEAR_CACHE_MAX:
            _conv_cache.clear()
        _conv_cache[key] = (d, tuple(y.shape), channels_last)
    return y.permute(0, 3, 1, 2) if channels_last else y


def _bhsd(t):
    B, H, S, D = t.shape
    st = t.stride()
    if (D > 1 and st[3] != 1) or (B * H * S > 1 and st[0] == st[1] == st[2] == 0) or min(st) < 0:
        t = t.contiguous()
        st = t.stride()
    return t, st[:3]


# Prepared attention descriptors for calls without a mask (the descriptor
# then holds no pointer and a template is shared as it is).
_sdpa_cache = {}
_tsr_attention = L.lib.tsr_attention


def _sdpa_impl(q, k, v, attn_mask, is_causal, scale, causal_align):
    key = None
    if attn_mask is None:
        key = (_tlayout(q), _tlayout(k), _tlayout(v), is_causal, scale, causal_align)
        ent = _sdpa_cache.get(key)
        if ent is not None:
            tpl, o_shape, squeeze = ent
            h = _cpu_handle(q, "tessera::scaled_dot_product_attention")
            o = q.new_empty(o_shape)
            st = _tsr_attention(h, _addressof(tpl), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr())
            if st:
                L.check(st)
            return o[0] if squeeze else o
    return _sdpa_prepare(q, k, v, attn_mask, is_causal, scale, causal_align, key)


def _sdpa_prepare(q, k, v, attn_mask, is_causal, scale, causal_align, key):
    who = "tessera::scaled_dot_product_attention"
    h = _handle(q, who)
    q_in, k_in, v_in = q, k, v
    _same_device(who, q, k=k, v=v, attn_mask=attn_mask)
    qc = _code(q, "q", who)
    if k.dtype != q.dtype or v.dtype != q.dtype:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: q, k and v must share a dtype ({q.dtype}, {k.dtype}, {v.dtype})")
    if not (q.dim() == k.dim() == v.dim()) or q.dim() not in (3, 4):
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: q, k, v must all be (B, H, S, D) or (H, S, D)")
    squeeze = q.dim() == 3
    if squeeze:
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
    B, Hq, Sq, D = q.shape
    Bk, Hkv, Skv, Dk = k.shape
    if Bk != B or Dk != D or tuple(v.shape) != tuple(k.shape):
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: "
               "k and v must be (B, Hkv, Skv, D) with q's B and D (Tessera needs v's head dim = q's)")
    q, qs = _bhsd(q)
    k, ks = _bhsd(k)
    v, vs = _bhsd(v)
    o = torch.empty((B, Hq, Sq, D), dtype=q.dtype, device=q.device)
    d = L.AttentionDesc()
    L.lib.tsr_attention_desc_init(_byref(d))
    d.batch, d.heads_q, d.heads_kv, d.seq_q, d.seq_kv, d.head_dim = B, Hq, Hkv, Sq, Skv, D
    d.dtype = qc
    d.q_strides[:], d.k_strides[:], d.v_strides[:] = qs, ks, vs
    d.o_strides[:] = o.stride()[:3]
    if scale is not None:
        if not scale > 0:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: scale ({scale}) must be > 0 (None = 1/sqrt(head_dim))")
        d.scale = scale
    if is_causal:
        d.causal = L.CAUSAL.get(causal_align, -1)
        if d.causal not in (1, 2):
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: causal_align {causal_align!r} is not 'top_left' or "
                   "'bottom_right'")
    mask = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_fill(~mask, -math.inf)
        elif mask.dtype != torch.float32 and mask.dtype != q.dtype:
            mask = mask.float()
        if mask.dim() > 4:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: attn_mask {tuple(mask.shape)} has more than 4 dims")
        try:
            mask = mask.expand(B, Hq, Sq, Skv)
        except RuntimeError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: attn_mask {tuple(attn_mask.shape)} does not broadcast to "
                   f"{(B, Hq, Sq, Skv)}")
        if Skv > 1 and mask.stride(3) != 1:
            mask = mask.contiguous()
        d.mask = mask.data_ptr()
        d.mask_dtype = _DT[mask.dtype]
        d.mask_strides[:] = mask.stride()[:3]
    L.check(L.lib.tsr_attention(h, _byref(d), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()))
    # kept when q, k and v were used as they are (no copy)
    if (key is not None and q.data_ptr() == q_in.data_ptr() and k.data_ptr() == k_in.data_ptr()
            and v.data_ptr() == v_in.data_ptr()):
        if len(_sdpa_cache) >= _LINEAR_CACHE_MAX:
            _sdpa_cache.clear()
        _sdpa_cache[key] = (d, tuple(o.shape), squeeze)
    return o[0] if squeeze else o


# Prepared row-op descriptors of the norms, as for linear (the descriptor
# holds no pointer, so a template is shared as it is).
_norm_cache = {}
_tsr_layernorm = L.lib.tsr_layernorm
_tsr_rmsnorm = L.lib.tsr_rmsnorm


def _tlayout(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def _norm_impl(op, x, normalized_shape, weight, bias, eps):
    key = (op, x.shape, x.stride(), x.dtype, x.device, tuple(normalized_shape), _tlayout(weight), _tlayout(bias),
           eps)
    tpl = _norm_cache.get(key)
    if tpl is None:
        return _norm_prepare(op, x, normalized_shape, weight, bias, eps, key)
    h = _cpu_handle(x, f"tessera::{op}")
    y = x.new_empty(x.shape)
    gp = weight.data_ptr() if weight is not None else None
    if op == "layer_norm":
        st = _tsr_layernorm(h, _addressof(tpl), x.data_ptr(), gp, bias.data_ptr() if bias is not None else None,
                            y.data_ptr())
    else:
        st = _tsr_rmsnorm(h, _addressof(tpl), x.data_ptr(), gp, y.data_ptr())
    if st:
        L.check(st)
    return y


def _norm_prepare(op, x, normalized_shape, weight, bias, eps, key):
    who = f"tessera::{op}"
    h = _handle(x, who)
    _same_device(who, x, weight=weight, bias=bias)
    xc = _code(x, "x", who)
    ns = tuple(normalized_shape)
    if not ns or tuple(x.shape[-len(ns):]) != ns:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: normalized_shape {list(ns)} is not the trailing shape of x "
               f"{tuple(x.shape)}")
    cols = math.prod(ns)
    x2 = x.reshape(math.prod(x.shape[:-len(ns)]), cols)
    rows = x2.shape[0]
    if (cols > 1 and x2.stride(1) != 1) or (rows > 1 and x2.stride(0) < cols):
        x2 = x2.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    d = L.RowwiseDesc()
    L.lib.tsr_rowwise_desc_init(_byref(d))
    d.rows, d.cols = rows, cols
    d.x_row_stride = x2.stride(0) if rows > 1 else cols
    d.y_row_stride = cols
    d.x_dtype = d.y_dtype = xc
    d.epsilon = eps if eps is not None else torch.finfo(x.dtype).eps
    g = b = None
    if weight is not None:
        g = weight.reshape(cols).float().contiguous() if weight.numel() == cols else None
        if g is None:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: weight has {weight.numel()} elements, not {cols}")
    if bias is not None:
        b = bias.reshape(cols).float().contiguous() if bias.numel() == cols else None
        if b is None:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: bias has {bias.numel()} elements, not {cols}")
    gp = g.data_ptr() if g is not None else None
    if op == "layer_norm":
        st = L.lib.tsr_layernorm(h, _byref(d), x2.data_ptr(), gp, b.data_ptr() if b is not None else None,
                                 y.data_ptr())
    else:
        st = L.lib.tsr_rmsnorm(h, _byref(d), x2.data_ptr(), gp, y.data_ptr())
    L.check(st)
    # kept when x, weight and bias were used as they are (no copy, no float())
    if (x2.data_ptr() == x.data_ptr() and (g is None or g.data_ptr() == weight.data_ptr())
            and (b is None or b.data_ptr() == bias.data_ptr())):
        if len(_norm_cache) >= _LINEAR_CACHE_MAX:
            _norm_cache.clear()
        _norm_cache[key] = d
    return y


def _layer_norm_impl(x, normalized_shape, weight, bias, eps):
    return _norm_impl("layer_norm", x, normalized_shape, weight, bias, eps)


def _rms_norm_impl(x, normalized_shape, weight, eps):
    return _norm_impl("rms_norm", x, normalized_shape, weight, None, eps)


# ------------------------------------------------------------- fake kernels

def _linear_fake(x, weight, bias, activation):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _conv2d_fake(x, weight, bias, stride, padding, dilation, groups, layout, activation):
    if layout.upper() == "NCHW":
        n, _, hh, ww = x.shape
        k, _, r, s = weight.shape
        shape = (n, k, _conv_out(hh, padding[0], padding[1], dilation[0], r, stride[0]),
                 _conv_out(ww, padding[2], padding[3], dilation[1], s, stride[1]))
    else:
        n, hh, ww, _ = x.shape
        k, r, s, _ = weight.shape
        shape = (n, _conv_out(hh, padding[0], padding[1], dilation[0], r, stride[0]),
                 _conv_out(ww, padding[2], padding[3], dilation[1], s, stride[1]), k)
    return x.new_empty(shape)


def _sdpa_fake(q, k, v, attn_mask, is_causal, scale, causal_align):
    return q.new_empty(q.shape)


def _layer_norm_fake(x, normalized_shape, weight, bias, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _rms_norm_fake(x, normalized_shape, weight, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


# ------------------------------------------------------------ registration

_OPS = {
    "linear": ("(Tensor x, Tensor weight, Tensor? bias, str activation) -> Tensor", _linear_impl, _linear_fake),
    "conv2d": ("(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
               "int groups, str layout, str activation) -> Tensor", _conv2d_impl, _conv2d_fake),
    "scaled_dot_product_attention": (
        "(Tensor q, Tensor k, Tensor v, Tensor? attn_mask, bool is_causal, float? scale, str causal_align) "
        "-> Tensor", _sdpa_impl, _sdpa_fake),
    "layer_norm": ("(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float? eps) -> Tensor",
                   _layer_norm_impl, _layer_norm_fake),
    "rms_norm": ("(Tensor x, int[] normalized_shape, Tensor? weight, float? eps) -> Tensor", _rms_norm_impl,
                 _rms_norm_fake),
}

_library = None  # torch.library.Library must stay alive for its registrations to stay
REGISTRATION = None  # "custom_op" or "Library", for tests and logs


def _register():
    global _library, REGISTRATION
    lib_mod = torch.library
    if hasattr(lib_mod, "custom_op") and hasattr(lib_mod, "register_fake"):
        for name, (schema, impl, fake) in _OPS.items():
            op = lib_mod.custom_op(f"tessera::{name}", impl, mutates_args=(), schema=schema)
            op.register_fake(fake)
            _ad.register(name, op)
        REGISTRATION = "custom_op"
        return
    _library = lib_mod.Library("tessera", "DEF")
    for name, (schema, impl, fake) in _OPS.items():
        _library.define(name + schema)
        _library.impl(name, impl, "CPU")
        _library.impl(name, impl, "CUDA")
        try:
            _library.impl(name, fake, "Meta")
        except (RuntimeError, TypeError, ValueError):  # very old torch: no Python Meta kernels
            pass
        try:  # torch.ops.tessera.* differentiable too
            _library.impl(name, _autograd_kernel(name), "Autograd")
        except (RuntimeError, TypeError, ValueError):
            pass
    REGISTRATION = "Library"


def _autograd_kernel(name):
    """The Autograd-key kernel of torch.ops.tessera.<name>: a recorded call
    when an input needs a gradient, else straight to the kernels below."""
    op = []  # torch.ops.tessera.<name>, looked up on first use (it exists once defined)
    guard = _ad._Guard

    def kernel(*args):
        if _is_grad_enabled():
            for a in args:
                if type(a) is not list and isinstance(a, _Tensor) and a.requires_grad:
                    return _ad.apply(name, *args)
        if not op:
            op.append(getattr(torch.ops.tessera, name))
        g = guard()  # dispatch below Autograd while it lives (torch 1.13's RAII guard)
        try:
            return op[0](*args)
        finally:
            del g
    return kernel


try:
    _already = hasattr(torch.ops, "tessera") and hasattr(torch.ops.tessera, "linear")
except (AttributeError, RuntimeError):
    _already = False
if not _already:
    _register()


# ---------------------------------------------------------------- wrappers
# The wrappers call the kernel directly when nothing but the kernel could
# answer: plain tensors (no subclass such as FakeTensor), no torch function
# or dispatch mode, no tracing or compiling, no tensor that autograd would
# have to record. That saves torch.library's dispatch (~10 µs a call on
# torch 1.13). Anything else goes through torch.ops.tessera.*, as before.

_Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled
_is_tracing = torch.jit.is_tracing
_function_mode = getattr(torch._C, "_is_torch_function_mode_enabled", lambda: False)
if hasattr(torch._C, "_len_torch_dispatch_mode"):  # torch >= 2.0
    def _dispatch_mode():
        return torch._C._len_torch_dispatch_mode() > 0
else:  # 1.13
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode
    except ImportError:
        def _current_mode():
            return True  # unknown torch: never bypass
    def _dispatch_mode():
        return _current_mode() is not None
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


def _direct(*tensors):
    """True when the kernel may be called without torch's dispatcher."""
    grad = _is_grad_enabled()
    for t in tensors:
        if t is not None and (type(t) is not _Tensor or (grad and t.requires_grad)):
            return False
    return not (_function_mode() or _dispatch_mode() or _is_tracing() or _compiling())


def _pair(v, name):
    if isinstance(v, int):
        return [v, v]
    v = [int(i) for i in v]
    if len(v) != 2:
        raise ValueError(f"tessera.torch: {name} {v} must be an int or 2 ints")
    return v


def linear(x, weight, bias=None, activation="none"):
    """x @ weight.T + bias, then activation ('relu', 'gelu', 'gelu_tanh',
    'silu', 'sigmoid', 'tanh') fused in the GEMM's epilogue; as
    torch.nn.functional.linear."""
    if _direct(x, weight, bias):
        return _linear_impl(x, weight, bias, activation)
    if _ad.needs_grad(x, weight, bias):
        return _ad.apply("linear", x, weight, bias, activation)
    return torch.ops.tessera.linear(x, weight, bias, activation)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, layout="NCHW", activation="none"):
    """As torch.nn.functional.conv2d (layout 'NCHW', weight (k, c/groups, r,
    s); a channels_last x runs as NHWC and gives a channels_last result), or
    layout 'NHWC' with x (n, h, w, c) and weight (k, r, s, c/groups).
    padding: int, (h, w), (top, bottom, left, right), 'valid' or 'same'."""
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0, 0, 0]
        elif padding == "same":
            r, s = (weight.shape[2:] if layout.upper() == "NCHW" else weight.shape[1:3])
            th, tw = dilation[0] * (r - 1), dilation[1] * (s - 1)
            padding = [th // 2, th - th // 2, tw // 2, tw - tw // 2]
        else:
            raise ValueError(f"tessera.torch.conv2d: padding {padding!r} is not 'valid' or 'same'")
    elif isinstance(padding, int):
        padding = [padding] * 4
    else:
        padding = [int(p) for p in padding]
        if len(padding) == 2:
            padding = [padding[0], padding[0], padding[1], padding[1]]
    if _direct(x, weight, bias):
        return _conv2d_impl(x, weight, bias, stride, padding, dilation, int(groups), layout, activation)
    if _ad.needs_grad(x, weight, bias):
        return _ad.apply("conv2d", x, weight, bias, stride, padding, dilation, int(groups), layout, activation)
    return torch.ops.tessera.conv2d(x, weight, bias, stride, padding, dilation, int(groups), layout, activation)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, causal_align="top_left"):
    """As torch.nn.functional.scaled_dot_product_attention (no dropout), with
    GQA when k/v have fewer heads than q, and causal_align 'bottom_right'
    for FlashAttention's diagonal when seq_q != seq_kv."""
    if _direct(q, k, v, attn_mask):
        return _sdpa_impl(q, k, v, attn_mask, bool(is_causal), scale, causal_align)
    if _ad.needs_grad(q, k, v, attn_mask):
        return _ad.apply("scaled_dot_product_attention", q, k, v, attn_mask, bool(is_causal), scale, causal_align)
    return torch.ops.tessera.scaled_dot_product_attention(q, k, v, attn_mask, bool(is_causal), scale,
                                                          causal_align)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """As torch.nn.functional.layer_norm (weight and bias used as float32)."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    if _direct(x, weight, bias):
        return _layer_norm_impl(x, list(normalized_shape), weight, bias, eps)
    if _ad.needs_grad(x, weight, bias):
        return _ad.apply("layer_norm", x, list(normalized_shape), weight, bias, eps)
    return torch.ops.tessera.layer_norm(x, list(normalized_shape), weight, bias, eps)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """As torch.nn.functional.rms_norm (eps None = finfo(x.dtype).eps)."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    if _direct(x, weight):
        return _rms_norm_impl(x, list(normalized_shape), weight, eps)
    if _ad.needs_grad(x, weight):
        return _ad.apply("rms_norm", x, list(normalized_shape), weight, eps)
    return torch.ops.tessera.rms_norm(x, list(normalized_shape), weight, eps)
