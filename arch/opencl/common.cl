/* Shared OpenCL C for every Tessera kernel: dtype loads and stores (f16 via
 * vload_half/vstore_half_rte, which every OpenCL 1.2 device has; bf16 as the
 * high half of an f32 with round-to-nearest-even), the activations and the
 * fused epilogue. Dtype codes are tessera.h's: 0 f32, 1 f16, 2 bf16, 3 i8,
 * 4 i32. Every switch below is on a compile-time constant. */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_I8 3
#define DT_I32 4

typedef global const void *gcptr;

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* realv: a vector of VW floats (the schedule's vector width), when set. */
#ifdef VW
#if VW == 1
typedef float realv;
#define VLOADV(i, p) ((p)[i])
#define VSTOREV(v, i, p) ((p)[i] = (v))
#else
typedef CAT(float, VW) realv;
#define VLOADV(i, p) CAT(vload, VW)(i, p)
#define VSTOREV(v, i, p) CAT(vstore, VW)(v, i, p)
#endif
#endif

inline float ld_f(gcptr p, int dt, long i) {
    if (dt == DT_F16) return vload_half(i, (global const half *)p);
    if (dt == DT_BF16) return as_float((uint)((global const ushort *)p)[i] << 16);
    if (dt == DT_I8) return (float)((global const char *)p)[i];
    if (dt == DT_I32) return (float)((global const int *)p)[i];
    return ((global const float *)p)[i];
}

inline ushort f32_to_bf16(float v) {
    uint u = as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline void st_f(global void *p, int dt, long i, float v) {
    if (dt == DT_F16) vstore_half_rte(v, i, (global half *)p);
    else if (dt == DT_BF16) ((global ushort *)p)[i] = f32_to_bf16(v);
    else ((global float *)p)[i] = v;
}

/* tanh saturated explicitly: some drivers' tanh misbehaves far out */
inline float tanh_f(float u) { return fabs(u) > 9.0f ? copysign(1.0f, u) : tanh(u); }

/* Activations as tsr_activation_ref defines them; the GELUs in its forms
 * that do not cancel for x < 0 (1 + erf, 1 + tanh near -1 lose Phi). */
inline float act_f(int a, float x) {
    switch (a) {
    case 1: return x > 0.0f ? x : (isnan(x) ? x : 0.0f);
    case 2: return x * 0.5f * erfc(-x * 0.70710678118654752f);
    case 3: return x / (1.0f + exp(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
    case 4: return x / (1.0f + exp(-x));
    case 5: return 1.0f / (1.0f + exp(-x));
    case 6: return tanh_f(x);
    default: return x;
    }
}

/* The epilogue, read at run time (a program serves every epilogue): en
 * steps; step i has op eop[i] (1 bias, 2 activation, 3 residual),
 * activation eact[i], data dtype edt[i], data e0..e3, residual scale,
 * ld and batch stride es/eld/ebs[i]. */
#define EPI_PARAMS int en, int4 eop, int4 eact, int4 edt, gcptr e0, gcptr e1, gcptr e2, gcptr e3, \
    float4 es, long4 eld, long4 ebs
#define EPI_PASS en, eop, eact, edt, e0, e1, e2, e3, es, eld, ebs

inline float epi_step(int op, int act, int dt, gcptr d, float s, long ld, long bs, float v, long bidx,
                      long b, long row, long col) {
    if (op == 1) return v + ld_f(d, dt, bidx);
    if (op == 2) return act_f(act, v);
    if (op == 3) return v + s * ld_f(d, dt, b * bs + row * ld + col);
    return v;
}

inline float epilogue(float v, long bidx, long b, long row, long col, EPI_PARAMS) {
    if (en > 0) v = epi_step(eop.s0, eact.s0, edt.s0, e0, es.s0, eld.s0, ebs.s0, v, bidx, b, row, col);
    if (en > 1) v = epi_step(eop.s1, eact.s1, edt.s1, e1, es.s1, eld.s1, ebs.s1, v, bidx, b, row, col);
    if (en > 2) v = epi_step(eop.s2, eact.s2, edt.s2, e2, es.s2, eld.s2, ebs.s2, v, bidx, b, row, col);
    if (en > 3) v = epi_step(eop.s3, eact.s3, edt.s3, e3, es.s3, eld.s3, ebs.s3, v, bidx, b, row, col);
    return v;
}

/* alpha, beta, the epilogue and the store of one output value of dtype
 * c_t at element ci (bidx: the bias index). beta == 0 never reads C. */
inline void store_out(global void *C, int c_t, long ci, float acc, float alpha, float beta, long bidx,
                      long b, long row, long col, EPI_PARAMS) {
    float v = alpha * acc;
    if (beta != 0.0f) v = fma(beta, ld_f(C, c_t, ci), v);
    st_f(C, c_t, ci, epilogue(v, bidx, b, row, col, EPI_PASS));
}
