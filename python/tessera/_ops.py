"""The ops on NumPy arrays (and host __dlpack__ objects): gemm, conv2d,
attention, softmax, layer_norm, rms_norm and elementwise chains.

Every function validates what the C library cannot see (array lengths
behind pointers, shapes that must agree), maps strides it can express
straight into the descriptors, copies only what the ABI cannot express, and
raises the TesseraError subclass of the library's status with its message.
"""

import ctypes
import math

import numpy as np

from . import _context
from . import _lib as L
from ._arrays import (TSR_TO_NP, as_array, bf16_flag, data_ptr, elem_strides, from_bf16, out_code,
                      tensor_desc)

_nd = np.ndarray
_byref = ctypes.byref


def _shape(t):
    return "(" + ", ".join(str(int(v)) for v in t) + ("," if len(t) == 1 else "") + ")"


def _writable(a, name, who):
    if not a.flags.writeable:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} is read-only (a broadcast or otherwise locked view)")


def _vector(v, length, name, who, bf16, out_dtype_code, what):
    """A contiguous f32 (or the output's dtype) vector of `length`."""
    v, code = as_array(v, name, who, bf16)
    if v.ndim != 1 or v.shape[0] != length:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} has shape {_shape(v.shape)}; it must be ({length},), "
               f"one value per {what}")
    if code not in (L.F32, out_dtype_code):
        v = from_bf16(v) if code == L.BF16 else v.astype(np.float32)
        code = L.F32
    return np.ascontiguousarray(v), code


def _activation(activation, who):
    code = L.ACTIVATIONS.get(activation if not isinstance(activation, str) else activation.lower(), -1)
    if code == -1:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: activation {activation!r} is not one of "
               + ", ".join(k for k in L.ACTIVATIONS if isinstance(k, str)))
    return code


def _step(ep, op, activation=0, data=0, dtype=L.F32, ld=0, batch_stride=0, scale=1.0):
    s = ep.steps[ep.num_steps]
    s.op, s.activation, s.data, s.dtype = op, activation, data, dtype
    s.ld, s.batch_stride, s.scale = ld, batch_stride, scale
    ep.num_steps += 1


# -------------------------------------------------------------------- GEMM

def _layouts(X):
    """(row_ld, col_ld, batch_stride) of a 2-D/3-D matrix view in elements:
    row_ld is set when it reads as row-major, col_ld as column-major; None
    when neither (or a stride is negative or fractional)."""
    rows, cols = X.shape[-2], X.shape[-1]
    if X.size == 0:  # nothing is read or written: any legal ld will do
        return max(cols, 1), max(rows, 1), 0
    st = elem_strides(X)
    if st is None:
        return None
    sr, sc = st[-2], st[-1]
    row_ld = col_ld = None
    if (cols <= 1 or sc == 1) and (rows <= 1 or sr >= max(cols, 1)):
        row_ld = sr if rows > 1 else max(cols, 1)
    if (rows <= 1 or sr == 1) and (cols <= 1 or sc >= max(rows, 1)):
        col_ld = sc if cols > 1 else max(rows, 1)
    if row_ld is None and col_ld is None:
        return None
    return row_ld, col_ld, (st[0] if X.ndim == 3 else 0)


def _in_layout(X):
    """X with its _layouts (copied row-major only if it reads as neither
    order, or as a batch with stride 0)."""
    lay = _layouts(X)
    if lay is None or (X.ndim == 3 and X.shape[0] > 1 and lay[2] == 0):
        X = np.ascontiguousarray(X)  # row-major, tight batch
        lay = _layouts(X)
    return X, lay


def _as_order(X, row):
    """A copy of X laid out row-major (row) or column-major per matrix."""
    if row:
        return np.ascontiguousarray(X)
    return np.ascontiguousarray(X.swapaxes(-1, -2)).swapaxes(-1, -2)


_gemm_cache = {}
_tsr_gemm = L.lib.tsr_gemm
_GemmDesc = L.GemmDesc
_addressof = ctypes.addressof
_c_void_p = ctypes.c_void_p
# where the first epilogue step's data pointer (a cached call's bias) lies in a GemmDesc
_BIAS_DATA_OFF = L.GemmDesc.epilogue.offset + L.Epilogue.steps.offset + L.EpilogueStep.data.offset


def gemm(a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, c=None, bias=None, activation=None,
         residual=None, residual_scale=1.0, out_dtype=None, dtype=None, ctx=None):
    """c = epilogue(alpha * op(a) @ op(b) + beta * c), op(x) = x.T when trans_x.

    a: (..., m, k), b: (..., k, n) after the transposes, leading (batch)
    dims broadcast as in numpy.matmul. float32 -> float32; float16 or
    bfloat16 (uint16 with dtype='bf16') -> the input dtype or float32
    (out_dtype); int8 -> int32. Row- or column-major views (transposed views
    included) are passed as trans flags and leading dimensions, without a
    copy; a shared b (2-D) folds the batch into the rows.
    c: the output to accumulate into (beta) and write; else a new array.
    Epilogue, in order: bias (n,), activation ('relu', 'gelu', 'gelu_tanh',
    'silu', 'sigmoid', 'tanh'), residual_scale * residual (c's shape).
    """
    # A repeated call (same shapes, strides, dtypes, scalars, bias layout and
    # activation) reuses the descriptor the first one built: the checks and
    # the build are skipped, the C front validates the call again anyway.
    if (c is None and residual is None and out_dtype is None and dtype is None and ctx is None
            and type(a) is _nd and type(b) is _nd and (bias is None or type(bias) is _nd)
            and (activation is None or type(activation) is str)):
        key = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, trans_a, trans_b, alpha, beta,
               None if bias is None else (bias.shape, bias.strides, bias.dtype), activation)
        ent = _gemm_cache.get(key)
        if ent is not None:
            d = _context._default
            h = d._h if d is not None else None
            if not h:
                h = _context.default_context().handle
            out = np.empty(ent[1], ent[2])
            if bias is None:
                da = ent[0]
            else:  # the template stays untouched: other threads may be using it
                dc = _GemmDesc.from_buffer_copy(ent[3])
                da = _addressof(dc)
                _c_void_p.from_address(da + _BIAS_DATA_OFF).value = data_ptr(bias)
            st = _tsr_gemm(h, da, data_ptr(a), data_ptr(b), data_ptr(out))
            if st:
                L.check(st)
            return out
    else:
        key = None
    return _gemm(a, b, trans_a, trans_b, alpha, beta, c, bias, activation, residual, residual_scale,
                 out_dtype, dtype, ctx, key)


def _gemm(a, b, trans_a, trans_b, alpha, beta, c, bias, activation, residual, residual_scale, out_dtype,
          dtype, ctx, key=None):
    who = "gemm"
    bf = bf16_flag(dtype, who)
    h = _context.host_handle(ctx, who)
    a_in, b_in, bias_in = a, b, bias
    a, ta = as_array(a, "a", who, bf)
    b, tb = as_array(b, "b", who, bf)
    if a.ndim < 2 or b.ndim < 2:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: a {_shape(a.shape)} and b {_shape(b.shape)} must be matrices "
               "(2 dims) or batches of them (more)")
    if ta != tb:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: a is {L.DTYPE_NAMES[ta]} but b is {L.DTYPE_NAMES[tb]}; both must "
               "have the same dtype")
    A = a.swapaxes(-1, -2) if trans_a else a
    B = b.swapaxes(-1, -2) if trans_b else b
    m, k = A.shape[-2:]
    k2, n = B.shape[-2:]
    if k2 != k:
        L.fail(L.ERR_INVALID_ARGUMENT,
               f"{who}: op(b) has {k2} rows but op(a) has {k} columns (k must agree): a {_shape(a.shape)}"
               f"{' transposed' if trans_a else ''}, b {_shape(b.shape)}{' transposed' if trans_b else ''}")
    try:
        batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    except ValueError:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: the batch dims of a {_shape(a.shape)} and b {_shape(b.shape)} "
               "do not broadcast")
    oc = out_code(out_dtype, who)
    if oc is None:
        oc = L.I32 if ta == L.I8 else ta
    full = batch + (m, n)
    if c is not None:
        c, cc = as_array(c, "c", who, bf or oc == L.BF16, output=True)
        if c.shape != full:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: c has shape {_shape(c.shape)} but the product's is "
                   f"{_shape(full)}")
        if out_dtype is not None and cc != oc:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: c is {L.DTYPE_NAMES[cc]} but out_dtype is "
                   f"{L.DTYPE_NAMES[oc]}")
        _writable(c, "c", who)
        oc = cc
    elif beta != 0:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: beta ({beta}) needs c, the matrix to accumulate into")
    out = c if c is not None else np.empty(full, TSR_TO_NP[oc])
    nb = math.prod(batch)
    if nb == 0:
        return out  # an empty batch: nothing to compute
    plain = c is None and residual is None

    # Shape the operands as one (folded) 2-D product or a 3-D strided batch.
    b_shared = all(s == 1 or st == 0 for s, st in zip(B.shape[:-2], B.strides[:-2]))
    if nb == 1 or b_shared:
        B2 = B[(0,) * (B.ndim - 2)] if B.ndim > 2 else B
        A2 = np.broadcast_to(A, batch + (m, k)).reshape(nb * m, k)
        C2 = out.reshape(nb * m, n)
        rows = nb * m
        nbatch = 1
    else:
        A2 = np.broadcast_to(A, batch + (m, k)).reshape(nb, m, k)
        B2 = np.broadcast_to(B, batch + (k, n)).reshape(nb, k, n)
        C2 = out.reshape(nb, m, n)
        rows = m
        nbatch = nb

    # c decides the order; a copy (written back after) if it reads as
    # neither, or if reshaping it for the batch could not make a view
    c_back = False
    lay_c = _layouts(C2)
    if lay_c is None or (nbatch > 1 and lay_c[2] == 0) or (out.size and data_ptr(C2) != data_ptr(out)):
        C2 = np.ascontiguousarray(C2)  # holds c's values, for beta
        c_back = True
        lay_c = _layouts(C2)
    row = lay_c[0] is not None
    ldc, sc = (lay_c[0] if row else lay_c[1]), lay_c[2]
    A2, lay_a = _in_layout(A2)
    B2, lay_b = _in_layout(B2)
    a_row = lay_a[0] is not None if row else lay_a[1] is None
    b_row = lay_b[0] is not None if row else lay_b[1] is None
    cacheable = (plain and not c_back and data_ptr(A2) == data_ptr(a) and data_ptr(B2) == data_ptr(b)
                 and type(a_in) is _nd and type(b_in) is _nd and out_dtype is None and not bf)

    d = L.GemmDesc()
    L.lib.tsr_gemm_desc_init(_byref(d))
    d.layout = L.ROW_MAJOR if row else L.COL_MAJOR
    d.trans_a = L.NO_TRANS if a_row == row else L.TRANS
    d.trans_b = L.NO_TRANS if b_row == row else L.TRANS
    d.m, d.n, d.k = rows, n, k
    d.a_dtype, d.b_dtype, d.c_dtype = ta, tb, oc
    d.lda = lay_a[0] if a_row else lay_a[1]
    d.ldb = lay_b[0] if b_row else lay_b[1]
    d.ldc = ldc
    d.batch = nbatch
    if nbatch > 1:
        d.stride_a, d.stride_b, d.stride_c = lay_a[2], lay_b[2], sc
    d.alpha, d.beta = alpha, beta

    keep = []
    if bias is not None:
        bias, bc = _vector(bias, n, "bias", who, bf, oc, "column (n)")
        keep.append(bias)
        _step(d.epilogue, L.EPI_BIAS, data=data_ptr(bias), dtype=bc)
    act = _activation(activation, who)
    if act:
        _step(d.epilogue, L.EPI_ACTIVATION, activation=act)
    if residual is not None:
        r, rc = as_array(residual, "residual", who, bf or oc == L.BF16)
        try:
            r = np.broadcast_to(r, full)
        except ValueError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: residual {_shape(r.shape)} does not broadcast to the "
                   f"output {_shape(full)}")
        if rc not in (L.F32, oc):
            r = from_bf16(r) if rc == L.BF16 else r.astype(np.float32)
            rc = L.F32
        r = r.reshape(C2.shape)
        lay_r = _layouts(r)
        if (lay_r is None or (lay_r[0] if row else lay_r[1]) is None
                or (nbatch > 1 and lay_r[2] == 0)):
            r = _as_order(r, row)
            lay_r = _layouts(r)
        keep.append(r)
        _step(d.epilogue, L.EPI_RESIDUAL, data=data_ptr(r), dtype=rc, ld=lay_r[0] if row else lay_r[1],
              batch_stride=lay_r[2] if nbatch > 1 else 0, scale=residual_scale)

    L.check(_tsr_gemm(h, ctypes.addressof(d), data_ptr(A2), data_ptr(B2), data_ptr(C2)))
    if c_back:
        out[...] = C2.reshape(out.shape)
    # kept when a, b and the bias were used as they are (no copy, no conversion)
    if (cacheable and key is not None
            and (bias_in is None or (type(bias_in) is _nd and data_ptr(keep[0]) == data_ptr(bias_in)))):
        if len(_gemm_cache) > 512:
            _gemm_cache.clear()
        _gemm_cache[key] = (ctypes.addressof(d), full, out.dtype, d)
    return out


# ------------------------------------------------------------- convolution

_FILTERS = {"OHWI": L.FILTER_OHWI, "OIHW": L.FILTER_OIHW, "HWIO": L.FILTER_HWIO}


def _pair(v, name, who):
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    try:
        a, b = v
        return int(a), int(b)
    except (TypeError, ValueError):
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} {v!r} must be an int or a pair of ints")


def _padding(padding, r, s, dil, stride, who):
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding == "same":
            if stride != (1, 1):
                L.fail(L.ERR_NOT_SUPPORTED, f"{who}: padding='same' needs stride 1 (got {stride})")
            th, tw = dil[0] * (r - 1), dil[1] * (s - 1)
            return th // 2, th - th // 2, tw // 2, tw - tw // 2
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: padding {padding!r} is not 'valid', 'same' or numbers")
    if isinstance(padding, (int, np.integer)):
        p = int(padding)
        return p, p, p, p
    p = tuple(int(v) for v in padding)
    if len(p) == 2:
        return p[0], p[0], p[1], p[1]
    if len(p) == 4:
        return p
    L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: padding {padding!r} must be an int, (h, w) or (top, bottom, left, "
           "right)")


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, layout="NHWC", activation=None, *,
           filter_layout=None, residual=None, residual_scale=1.0, out_dtype=None, dtype=None, ctx=None):
    """y = epilogue(conv2d(x, w)) (cross-correlation, as in every framework).

    layout 'NHWC': x (n, h, w, c), w 'OHWI' (k, r, s, c/groups) by default;
    layout 'NCHW': x (n, c, h, w), w 'OIHW' (k, c/groups, r, s) by default
    (PyTorch's). filter_layout may also be 'HWIO' (r, s, c/groups, k).
    stride, dilation: int or (h, w); padding: int, (h, w), (top, bottom,
    left, right), 'valid' or 'same' (stride 1). Epilogue: bias (k,),
    activation, residual_scale * residual (y's shape). Returns y in layout.
    """
    who = "conv2d"
    bf = bf16_flag(dtype, who)
    h = _context.host_handle(ctx, who)
    fmt = {"NHWC": L.NHWC, "NCHW": L.NCHW}.get(str(layout).upper())
    if fmt is None:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: layout {layout!r} is not 'NHWC' or 'NCHW'")
    fl = filter_layout or ("OHWI" if fmt == L.NHWC else "OIHW")
    ff = _FILTERS.get(str(fl).upper())
    if ff is None:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: filter_layout {filter_layout!r} is not one of "
               + ", ".join(_FILTERS))
    x, xc = as_array(x, "x", who, bf)
    w, wc = as_array(w, "w", who, bf)
    if x.ndim != 4 or w.ndim != 4:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: x {_shape(x.shape)} and w {_shape(w.shape)} must have 4 dims")
    if xc != wc:
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: x is {L.DTYPE_NAMES[xc]} but w is {L.DTYPE_NAMES[wc]}")
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w)
    if fmt == L.NHWC:
        n, hh, ww, c = x.shape
    else:
        n, c, hh, ww = x.shape
    if ff == L.FILTER_OHWI:
        k, r, s, cg = w.shape
    elif ff == L.FILTER_OIHW:
        k, cg, r, s = w.shape
    else:
        r, s, cg, k = w.shape
    groups = int(groups)
    if groups >= 1 and cg * groups != c:
        L.fail(L.ERR_INVALID_ARGUMENT,
               f"{who}: w {_shape(w.shape)} ({fl}) has {cg} input channels per group but x has c = {c} in "
               f"{groups} group(s) (c / groups = {c / groups:g})")
    stride = _pair(stride, "stride", who)
    dil = _pair(dilation, "dilation", who)
    pt, pb, pl, pr = _padding(padding, r, s, dil, stride, who)
    oc = out_code(out_dtype, who)
    if oc is None:
        oc = xc

    d = L.Conv2dDesc()
    L.lib.tsr_conv2d_desc_init(_byref(d))
    d.format, d.filter_format = fmt, ff
    d.n, d.c, d.h, d.w, d.k, d.r, d.s = n, c, hh, ww, k, r, s
    d.stride_h, d.stride_w = stride
    d.pad_top, d.pad_bottom, d.pad_left, d.pad_right = pt, pb, pl, pr
    d.dilation_h, d.dilation_w = dil
    d.groups = groups
    d.x_dtype, d.w_dtype, d.y_dtype = xc, wc, oc
    p, q = ctypes.c_int64(), ctypes.c_int64()
    L.check(L.lib.tsr_conv2d_output_shape(_byref(d), _byref(p), _byref(q)))
    yshape = (n, p.value, q.value, k) if fmt == L.NHWC else (n, k, p.value, q.value)
    keep = []
    if bias is not None:
        bias, bc = _vector(bias, k, "bias", who, bf, oc, "output channel (k)")
        keep.append(bias)
        _step(d.epilogue, L.EPI_BIAS, data=data_ptr(bias), dtype=bc)
    act = _activation(activation, who)
    if act:
        _step(d.epilogue, L.EPI_ACTIVATION, activation=act)
    if residual is not None:
        res, rc = as_array(residual, "residual", who, bf or oc == L.BF16)
        try:
            res = np.broadcast_to(res, yshape)
        except ValueError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: residual {_shape(res.shape)} does not broadcast to y "
                   f"{_shape(yshape)}")
        if rc not in (L.F32, oc):
            res, rc = (from_bf16(res) if rc == L.BF16 else res.astype(np.float32)), L.F32
        res = np.ascontiguousarray(res)
        keep.append(res)
        _step(d.epilogue, L.EPI_RESIDUAL, data=data_ptr(res), dtype=rc, scale=residual_scale)
    y = np.empty(yshape, TSR_TO_NP[oc])
    L.check(L.lib.tsr_conv2d(h, _byref(d), data_ptr(x), data_ptr(w), data_ptr(y)))
    return y


# --------------------------------------------------------------- attention

def _bhsd(t, name, who):
    """A (B, H, S, D) view with a unit last stride and strides in elements."""
    st = elem_strides(t)
    B, H, S, D = t.shape
    if st is None or (D > 1 and st[3] != 1) or (B * H * S > 1 and st[0] == st[1] == st[2] == 0):
        t = np.ascontiguousarray(t)
        st = elem_strides(t)
    return t, st[:3]


def attention(q, k, v, *, causal=None, scale=None, mask=None, return_lse=False, layout="BHSD", dtype=None,
              ctx=None):
    """o = softmax(scale * q k^T + mask, causal) v per (batch, head).

    q: (B, Hq, Sq, D), k and v: (B, Hkv, Skv, D) (layout 'BHSD'; 'BSHD'
    swaps the middle dims; 3-D inputs have no batch dim). Hkv divides Hq:
    query head h reads kv head h // (Hq // Hkv) (GQA/MQA). Strided views
    (e.g. heads sliced out of a packed qkv) are used in place.
    causal: None, 'top_left' (True; PyTorch's is_causal) or 'bottom_right'.
    scale: None = 1/sqrt(D). mask: additive float mask broadcastable to
    (B, Hq, Sq, Skv), or boolean (True = attend, as torch SDPA).
    return_lse: also return the log-sum-exp (B, Hq, Sq) float32.
    """
    who = "attention"
    bf = bf16_flag(dtype, who)
    h = _context.host_handle(ctx, who)
    lay = str(layout).upper()
    if lay not in ("BHSD", "BSHD"):
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: layout {layout!r} is not 'BHSD' or 'BSHD'")
    causal_code = L.CAUSAL.get(causal, -1) if not isinstance(causal, str) else L.CAUSAL.get(causal.lower(), -1)
    if causal_code == -1:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: causal {causal!r} is not None, 'top_left' or 'bottom_right'")
    q, qc = as_array(q, "q", who, bf)
    k, kc = as_array(k, "k", who, bf)
    v, vc = as_array(v, "v", who, bf)
    if not (q.ndim == k.ndim == v.ndim) or q.ndim not in (3, 4):
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: q {_shape(q.shape)}, k {_shape(k.shape)} and v "
               f"{_shape(v.shape)} must all have 4 dims ({lay}) or all 3 (no batch)")
    if not (qc == kc == vc):
        L.fail(L.ERR_NOT_SUPPORTED, f"{who}: q, k and v must have one dtype (got {L.DTYPE_NAMES[qc]}, "
               f"{L.DTYPE_NAMES[kc]}, {L.DTYPE_NAMES[vc]})")
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = q[None], k[None], v[None]
    if lay == "BSHD":
        q, k, v = q.swapaxes(1, 2), k.swapaxes(1, 2), v.swapaxes(1, 2)
    B, Hq, Sq, D = q.shape
    Bk, Hkv, Skv, Dk = k.shape
    if Bk != B or Dk != D or v.shape != k.shape:
        L.fail(L.ERR_INVALID_ARGUMENT,
               f"{who}: shapes do not agree ({lay}): q {_shape(q.shape)}, k {_shape(k.shape)}, "
               f"v {_shape(v.shape)}; k and v must be (B, Hkv, Skv, D) with q's B and D")
    q, qs = _bhsd(q, "q", who)
    k, ks = _bhsd(k, "k", who)
    v, vs = _bhsd(v, "v", who)
    if lay == "BSHD":
        o_store = np.empty((B, Sq, Hq, D), TSR_TO_NP[qc])
        o = o_store.swapaxes(1, 2)
    else:
        o_store = o = np.empty((B, Hq, Sq, D), TSR_TO_NP[qc])
    os_ = elem_strides(o)[:3]

    d = L.AttentionDesc()
    L.lib.tsr_attention_desc_init(_byref(d))
    d.batch, d.heads_q, d.heads_kv, d.seq_q, d.seq_kv, d.head_dim = B, Hq, Hkv, Sq, Skv, D
    d.dtype = qc
    d.q_strides[:], d.k_strides[:], d.v_strides[:], d.o_strides[:] = qs, ks, vs, os_
    if scale is not None:
        if not scale > 0:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: scale ({scale}) must be > 0 (None = 1/sqrt(head_dim))")
        d.scale = scale
    d.causal = causal_code
    keep = []
    if mask is not None:
        mk, mc = _mask_array(mask, who, bf)
        if mc not in (L.F32, qc):
            mk, mc = (from_bf16(mk) if mc == L.BF16 else mk.astype(np.float32)), L.F32
        if mk.ndim > 4:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: mask {_shape(mk.shape)} has more than 4 dims")
        try:
            mb = np.broadcast_to(mk, (B, Hq, Sq, Skv))
        except ValueError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: mask {_shape(mk.shape)} does not broadcast to (B, Hq, Sq, "
                   f"Skv) = {_shape((B, Hq, Sq, Skv))}")
        ms = elem_strides(mb)
        if ms is None or (Skv > 1 and ms[3] != 1):
            mb = np.ascontiguousarray(mb)
            ms = elem_strides(mb)
        keep.append(mb)
        d.mask = data_ptr(mb)
        d.mask_dtype = mc
        d.mask_strides[:] = ms[:3]
    lse = None
    if return_lse:
        lse = np.empty((B, Hq, Sq), np.float32)
        d.lse = data_ptr(lse)
    L.check(L.lib.tsr_attention(h, _byref(d), data_ptr(q), data_ptr(k), data_ptr(v), data_ptr(o)))
    res = o_store[0] if squeeze else o_store
    if return_lse:
        return res, (lse[0] if squeeze else lse)
    return res


def _mask_array(mask, who, bf):
    """(array, tsr dtype) of an attention mask; booleans (True = attend)
    become an additive float32 0 / -inf mask."""
    if not isinstance(mask, np.ndarray):
        mask = from_dlpack_any(mask) if hasattr(mask, "__dlpack__") else np.asarray(mask)
    if mask.dtype == np.bool_:
        return np.where(mask, np.float32(0), np.float32(-np.inf)), L.F32
    return as_array(mask, "mask", who, bf)


def from_dlpack_any(x):
    """Host __dlpack__ object -> ndarray, any dtype NumPy has (bool masks)."""
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, ValueError, RuntimeError, AttributeError):
        arr, _ = as_array(x, "mask", "attention")
        return arr


# ---------------------------------------------------------------- rowwise

def _rows(x, who):
    """x as (rows, cols) with unit column stride: (x2 view, row stride)."""
    if x.ndim == 0:
        L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: x is a scalar; it needs at least one dim (the row)")
    cols = x.shape[-1]
    st = elem_strides(x)
    if st is None or (cols > 1 and st[-1] != 1):
        x = np.ascontiguousarray(x)
    x2 = x.reshape(math.prod(x.shape[:-1]), cols) if x.ndim != 2 else x
    rows = x2.shape[0]
    rs = x2.strides[0] // x2.itemsize if rows > 1 else cols
    if rows > 1 and (x2.strides[0] < 0 or x2.strides[0] % x2.itemsize or rs < cols):
        x2 = np.ascontiguousarray(x2)
        rs = cols
    return x2, rs


def _rowwise(op, x, gamma, beta, eps, out_dtype, dtype, ctx, who, axis=-1):
    bf = bf16_flag(dtype, who)
    h = _context.host_handle(ctx, who)
    x, xc = as_array(x, "x", who, bf)
    moved = False
    if axis not in (-1, x.ndim - 1):
        try:
            x = np.moveaxis(x, axis, -1)
        except np.AxisError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: axis {axis} is out of range for x {_shape(x.shape)}")
        moved = True
    x2, rs = _rows(x, who)
    rows, cols = x2.shape
    oc = out_code(out_dtype, who)
    if oc is None:
        oc = xc
    y = np.empty(x.shape, TSR_TO_NP[oc])
    d = L.RowwiseDesc()
    L.lib.tsr_rowwise_desc_init(_byref(d))
    d.rows, d.cols, d.x_row_stride, d.y_row_stride = rows, cols, rs, cols
    d.x_dtype, d.y_dtype = xc, oc
    if eps is not None:
        d.epsilon = eps
    vecs = []
    for name, vv in (("gamma", gamma), ("beta", beta)):
        if vv is None:
            vecs.append(None)
            continue
        arr, code = as_array(vv, name, who, bf)
        if arr.shape != (cols,):
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: {name} has shape {_shape(arr.shape)}; it must be ({cols},), "
                   "one value per column of x's rows (its last dim)")
        arr = from_bf16(arr) if code == L.BF16 else np.ascontiguousarray(arr, dtype=np.float32)
        vecs.append(arr)
    gp = data_ptr(vecs[0]) if vecs[0] is not None else None
    if op == "softmax":
        st = L.lib.tsr_softmax(h, _byref(d), data_ptr(x2), data_ptr(y))
    elif op == "layernorm":
        bp = data_ptr(vecs[1]) if vecs[1] is not None else None
        st = L.lib.tsr_layernorm(h, _byref(d), data_ptr(x2), gp, bp, data_ptr(y))
    else:
        st = L.lib.tsr_rmsnorm(h, _byref(d), data_ptr(x2), gp, data_ptr(y))
    L.check(st)
    return np.moveaxis(y, -1, axis) if moved else y


def softmax(x, axis=-1, *, out_dtype=None, dtype=None, ctx=None):
    """softmax along axis (max-subtracted; a row of all -inf gives zeros)."""
    return _rowwise("softmax", x, None, None, None, out_dtype, dtype, ctx, "softmax", axis)


def layer_norm(x, gamma=None, beta=None, eps=1e-5, *, out_dtype=None, dtype=None, ctx=None):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim; gamma
    and beta (last dim,) are used as float32."""
    return _rowwise("layernorm", x, gamma, beta, eps, out_dtype, dtype, ctx, "layer_norm")


def rms_norm(x, gamma=None, eps=1e-5, *, out_dtype=None, dtype=None, ctx=None):
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    return _rowwise("rmsnorm", x, gamma, None, eps, out_dtype, dtype, ctx, "rms_norm")


# ------------------------------------------------------------------ chains

class Chain:
    """A fused elementwise chain (tsr_chain_desc): every step runs on each
    element in one pass over memory, in float32.

        y = tessera.chain(x).add(bias).gelu().mul(0.5).run()

    Unary steps: identity neg abs square sqrt rsqrt reciprocal exp log erf
    tanh sigmoid relu gelu gelu_tanh silu. Binary steps take a number or an
    array (broadcast NumPy-style to the result's shape, at most 4 arrays):
    add sub mul div maximum minimum pow, and rsub rdiv rpow with the operand
    on the left (other - v ...). At most 16 steps.
    """

    def __init__(self, x, *, dtype=None, ctx=None):
        self._who = "chain"
        self._bf = bf16_flag(dtype, self._who)
        self._x, self._xc = as_array(x, "x", self._who, self._bf)
        self._ctx = ctx
        self._steps = []
        self._operands = []

    def _unary(self, name):
        self._steps.append(("u", L.UNARY[name]))
        return self

    def _binary(self, op, other, left):
        if isinstance(other, (int, float, np.integer, np.floating)) or (
                isinstance(other, np.ndarray) and other.ndim == 0 and other.dtype.kind in "fiu"
                and other.dtype != np.uint16):
            self._steps.append(("s", L.BINARY[op], float(other), int(left)))
        else:
            arr, code = as_array(other, f"operands[{len(self._operands)}]", self._who, self._bf)
            self._operands.append((arr, code))
            self._steps.append(("t", L.BINARY[op], len(self._operands) - 1, int(left)))
        return self

    def add(self, other):
        return self._binary("add", other, False)

    def sub(self, other):
        return self._binary("sub", other, False)

    def rsub(self, other):
        return self._binary("sub", other, True)

    def mul(self, other):
        return self._binary("mul", other, False)

    def div(self, other):
        return self._binary("div", other, False)

    def rdiv(self, other):
        return self._binary("div", other, True)

    def maximum(self, other):
        return self._binary("max", other, False)

    def minimum(self, other):
        return self._binary("min", other, False)

    def pow(self, other):
        return self._binary("pow", other, False)

    def rpow(self, other):
        return self._binary("pow", other, True)

    def run(self, out=None, *, out_dtype=None):
        """Runs the chain; returns out (or a new array of the broadcast shape,
        x's dtype unless out_dtype)."""
        who = self._who
        h = _context.host_handle(self._ctx, who)
        ch = L.ChainDesc()
        L.lib.tsr_chain_desc_init(_byref(ch))
        x = self._x
        if elem_strides(x) is None:
            x = np.ascontiguousarray(x)
        xd = tensor_desc(x, self._xc, who, "x")
        ops = []
        for kind, *args in self._steps:
            if kind == "u":
                L.check(L.lib.tsr_chain_push_unary(_byref(ch), args[0]))
            elif kind == "s":
                L.check(L.lib.tsr_chain_push_scalar(_byref(ch), args[0], args[1], args[2]))
            else:
                arr, code = self._operands[args[1]]
                if elem_strides(arr) is None:
                    arr = np.ascontiguousarray(arr)
                ops.append(arr)
                od = tensor_desc(arr, code, who, f"operands[{args[1]}]")
                L.check(L.lib.tsr_chain_push_tensor(_byref(ch), args[0], _byref(od), args[2]))
        try:
            yshape = tuple(np.broadcast_shapes(x.shape, *(o.shape for o in ops)))
        except ValueError:
            L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: x {_shape(x.shape)} and the operands "
                   f"{', '.join(_shape(o.shape) for o in ops)} do not broadcast together")
        back = None
        if out is None:
            oc = out_code(out_dtype, who)
            oc = self._xc if oc is None else oc
            y = np.empty(yshape, TSR_TO_NP[oc])
        else:
            y, oc = as_array(out, "out", who, self._bf or out_dtype in ("bf16", "bfloat16"), output=True)
            if y.shape != yshape:
                L.fail(L.ERR_INVALID_ARGUMENT, f"{who}: out has shape {_shape(y.shape)}, the result's is "
                       f"{_shape(yshape)}")
            _writable(y, "out", who)
            if elem_strides(y) is None:
                back, y = y, np.ascontiguousarray(y)
        yd = tensor_desc(y, oc, who, "y", is_input=False)
        arr_t = (ctypes.c_void_p * max(1, len(ops)))(*[data_ptr(o) for o in ops])
        L.check(L.lib.tsr_elementwise_chain(h, _byref(ch), _byref(xd), data_ptr(x), arr_t, _byref(yd),
                                            data_ptr(y)))
        if back is not None:
            back[...] = y
            return back
        return y

    __call__ = run


def _make_unary(name):
    def step(self):
        return self._unary(name)
    step.__name__ = name
    step.__doc__ = f"v = {name}(v)"
    return step


for _name in L.UNARY:
    setattr(Chain, _name, _make_unary(_name))


def chain(x, *, dtype=None, ctx=None):
    """Starts an elementwise chain on x; see Chain."""
    return Chain(x, dtype=dtype, ctx=ctx)
