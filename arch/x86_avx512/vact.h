/* The activations in their accurate forms, over the simd.h names, for
 * every x86 kernel that applies one: the chains (x86_chain.h) and the GEMM
 * and convolution epilogues (x86_ukernel.h), so a GELU fused into a GEMM
 * rounds as the standalone op does, within the ulps x86_chain.h lists,
 * tails for x < 0 included. Include it after a simd.h, vmath.h and
 * vdtype.h. */
#ifndef TSR_X86_VACT_H
#define TSR_X86_VACT_H

#include "tessera.h"
#include "vexp.h"
#include "verf.h"

/* 1 / (1 + exp(-x)) as written for x >= -87 (exp(-x) <= e^87 is finite:
 * one exp and no select of an exp(-|x|) form); below, the result is e^x
 * itself (1 + e^x == 1), denormal from -87.3 on and rounded once there. */
static inline vf sigmoid_full(vf x) {
    const vf r = vf_div(vf_set1(1.0f), vf_add(vf_set1(1.0f), exp_unchecked(vf_mul(x, vf_set1(-1.0f)))));
    const vmask tail = vf_is(x, vf_set1(-87.0f), _CMP_LT_OQ);
    return vf_any(tail) ? vf_select(tail, r, exp_full(x)) : r;
}

/* x / (1 + exp(-x)) as written for x >= -87. Below, the result is
 * denormal and x e^x would be rounded twice: those lanes form x e^x at
 * 2^64 scale, so the result is rounded once (1 + e^x == 1 there). -inf
 * gives NaN (-inf * 0), as the definition does. */
static inline vf silu_full(vf x) {
    const vf r = vf_div(x, vf_add(vf_set1(1.0f), exp_unchecked(vf_mul(x, vf_set1(-1.0f)))));
    const vmask tail = vf_is(x, vf_set1(-87.0f), _CMP_LT_OQ);
    if (!vf_any(tail)) return r;
    const vf low = vf_mul(vf_mul(x, exp_scaled(x, 64.0f)), vf_set1(0x1p-64f));
    return vf_select(tail, r, low);
}

/* The epilogue's activation step. */
static inline vf vf_activation(tsr_activation act, vf x) {
    switch (act) {
    case TSR_ACT_RELU: return vf_relu(x);
    case TSR_ACT_SIGMOID: return sigmoid_full(x);
    case TSR_ACT_SILU: return silu_full(x);
    case TSR_ACT_TANH: return tanh_full(x);
    case TSR_ACT_GELU_ERF:
#if VL == 16
        return gelu_erf_pieces_ok(&x, 1) ? gelu_erf_by_pieces(x, gelu_erf_pieces, 5) : gelu_erf_full(x);
#else
        return gelu_erf_small_ok(x) ? gelu_erf_small(x) : gelu_erf_full(x);
#endif
    case TSR_ACT_GELU_TANH: return gelu_tanh_full(x);
    default: return x;
    }
}

#endif
