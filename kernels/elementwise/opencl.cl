/* OpenCL elementwise kernels.
 *  - chain: a fused chain in one pass; the steps are arguments (a small
 *    interpreter over at most 16 steps, the same program for every chain),
 *    x, y and the operands are strided views of y's shape (0 = broadcast);
 *    y's last dimension runs along get_global_id(0).
 *  - softmax, layernorm, rmsnorm: one work-group of RW work-items per row,
 *    reductions in local memory, sums in double where the device has it.
 * Value semantics follow kernels/elementwise/ref.c. */
#ifdef cl_khr_fp64
typedef double acc_t;
#else
typedef float acc_t;
#endif

inline float unary_f(int op, float x) {
    switch (op) {
    case 1: return -x;
    case 2: return fabs(x);
    case 3: return x * x;
    case 4: return sqrt(x);
    case 5: return 1.0f / sqrt(x);
    case 6: return 1.0f / x;
    case 7: return exp(x);
    case 8: return log(x);
    case 9: return erf(x);
    case 10: return act_f(6, x);
    case 11: return act_f(5, x);
    case 12: return act_f(1, x);
    case 13: return act_f(2, x);
    case 14: return act_f(3, x);
    case 15: return act_f(4, x);
    default: return x;
    }
}

inline float binary_f(int op, float a, float b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case 5: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    default: return pow(a, b);
    }
}

/* codes[s] = kind * 64 + op; opnd[s] = operand index; scal[s] = scalar */
kernel void chain(gcptr X, int x_t, long8 xs, global void *Y, int y_t, long8 ys, long8 shape, int ndim,
                  gcptr O0, gcptr O1, gcptr O2, gcptr O3, int4 o_t, long8 os0, long8 os1, long8 os2, long8 os3,
                  int nsteps, int16 codes, int16 opnd, float16 scal) {
    long sh[8], xst[8], yst[8], ost[4][8];
    vstore8(shape, 0, sh);
    vstore8(xs, 0, xst);
    vstore8(ys, 0, yst);
    vstore8(os0, 0, ost[0]);
    vstore8(os1, 0, ost[1]);
    vstore8(os2, 0, ost[2]);
    vstore8(os3, 0, ost[3]);
    const int last = ndim > 0 ? ndim - 1 : 0;
    const long j = get_global_id(0), inner = ndim > 0 ? sh[last] : 1;
    if (j >= inner) return;
    long outer = get_global_id(1);
    long xo = 0, yo = 0, oo[4] = {0, 0, 0, 0};
    for (int d = ndim - 2; d >= 0; d--) {
        const long idx = outer % sh[d];
        outer /= sh[d];
        xo += idx * xst[d], yo += idx * yst[d];
        for (int k = 0; k < 4; k++) oo[k] += idx * ost[k][d];
    }
    if (ndim > 0) {
        xo += j * xst[last], yo += j * yst[last];
        for (int k = 0; k < 4; k++) oo[k] += j * ost[k][last];
    }
    int cd[16], on[16];
    float sc[16];
    vstore16(codes, 0, cd);
    vstore16(opnd, 0, on);
    vstore16(scal, 0, sc);
    int ot[4];
    vstore4(o_t, 0, ot);
    gcptr ops[4] = {O0, O1, O2, O3};
    float v = ld_f(X, x_t, xo);
    for (int s = 0; s < nsteps; s++) {
        const int kind = cd[s] >> 6, op = cd[s] & 63;
        float other = sc[s];
        if (kind >= 3) other = ld_f(ops[on[s]], ot[on[s]], oo[on[s]]);
        if (kind == 0) v = unary_f(op, v);
        else if (kind == 1 || kind == 3) v = binary_f(op, v, other);
        else v = binary_f(op, other, v);
    }
    st_f(Y, y_t, yo, v);
}

#ifdef RW
/* Work-group sum of x (RW work-items); every work-item gets the total. */
inline acc_t wg_sum(acc_t x, local acc_t *red) {
    const int t = get_local_id(0);
    red[t] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = RW / 2; w > 0; w /= 2) {
        if (t < w) red[t] += red[t + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const acc_t total = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

kernel __attribute__((reqd_work_group_size(RW, 1, 1)))
void softmax(gcptr X, int x_t, long xrs, global void *Y, int y_t, long yrs, long cols) {
    local acc_t red[RW];
    const long row = get_group_id(1), xo = row * xrs, yo = row * yrs;
    const int t = get_local_id(0);
    float mx = -INFINITY;
    int nan_seen = 0;
    for (long j = t; j < cols; j += RW) {
        const float v = ld_f(X, x_t, xo + j);
        if (isnan(v)) nan_seen = 1;
        else mx = fmax(mx, v);
    }
    /* max and NaN through the same tree: -max summed is wrong, so use a max reduction */
    local float redm[RW];
    redm[t] = nan_seen ? NAN : mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = RW / 2; w > 0; w /= 2) {
        if (t < w) {
            const float a = redm[t], b = redm[t + w];
            redm[t] = isnan(a) || isnan(b) ? NAN : fmax(a, b);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float m = redm[0];
    if (isnan(m) || m == -INFINITY) {
        for (long j = t; j < cols; j += RW) st_f(Y, y_t, yo + j, isnan(m) ? NAN : 0.0f);
        return;
    }
    acc_t sum = 0;
    for (long j = t; j < cols; j += RW) sum += exp((acc_t)ld_f(X, x_t, xo + j) - (acc_t)m);
    sum = wg_sum(sum, red);
    for (long j = t; j < cols; j += RW)
        st_f(Y, y_t, yo + j, (float)(exp((acc_t)ld_f(X, x_t, xo + j) - (acc_t)m) / sum));
}

/* layernorm (center = 1) and rmsnorm (center = 0) */
kernel __attribute__((reqd_work_group_size(RW, 1, 1)))
void norm(gcptr X, int x_t, long xrs, global void *Y, int y_t, long yrs, long cols, int center,
          global const float *gamma, global const float *beta, float eps) {
    local acc_t red[RW];
    const long row = get_group_id(1), xo = row * xrs, yo = row * yrs;
    const int t = get_local_id(0);
    acc_t mean = 0;
    if (center) {
        acc_t s = 0;
        for (long j = t; j < cols; j += RW) s += ld_f(X, x_t, xo + j);
        mean = wg_sum(s, red) / (acc_t)cols;
    }
    acc_t var = 0;
    for (long j = t; j < cols; j += RW) {
        const acc_t v = ld_f(X, x_t, xo + j) - mean;
        var += v * v;
    }
    var = wg_sum(var, red);
    const acc_t inv = 1 / sqrt(var / (acc_t)cols + (acc_t)eps);
    for (long j = t; j < cols; j += RW) {
        acc_t v = ((acc_t)ld_f(X, x_t, xo + j) - mean) * inv;
        if (gamma) v *= gamma[j];
        if (beta) v += beta[j];
        st_f(Y, y_t, yo + j, (float)v);
    }
}
#endif
