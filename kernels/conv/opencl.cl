/* OpenCL conv2d (cross-correlation), see tessera.h for the shapes.
 *  - igemm: NHWC implicit GEMM, one group: C (N*P*Q x K) = im2col(x) W with
 *    W the filter as HWIO f32, its K padded to KP (a multiple of VW) by
 *    filter_hwio below. Each work-item holds an RM-pixel x VW-channel block
 *    in vector registers and reads x's channels 4 at a time.
 *  - direct: one work-item per output value in y's memory order, any
 *    format, filter format, groups (depthwise too), dtypes.
 *  - filter_hwio: any filter (format, dtype) to HWIO f32 with K padded.
 * Dtypes are arguments (ld_f/st_f switch on them); the epilogue reads the
 * residual densely in y's format (b = row = 0, column = y's element). */
#define CONV_SIZES long N, long C, long H, long W, long K, long R, long S, long P, long Q, \
    long sh, long sw, long pt, long pl, long dh, long dw

inline long act_off(int nhwc, long n, long c, long h, long w, long Cn, long Hn, long Wn) {
    return nhwc ? ((n * Hn + h) * Wn + w) * Cn + c : ((n * Cn + c) * Hn + h) * Wn + w;
}

inline long filt_off(int ff, long k, long c, long r, long s, long K, long Cg, long R, long S) {
    if (ff == 1) return ((k * Cg + c) * R + r) * S + s; /* OIHW */
    if (ff == 2) return ((r * S + s) * Cg + c) * K + k; /* HWIO */
    return ((k * R + r) * S + s) * Cg + c;              /* OHWI */
}

kernel void filter_hwio(gcptr Wsrc, int w_t, int ff, long K, long Cg, long R, long S, long KP,
                        global float *Wt) {
    const long k = get_global_id(0), q = get_global_id(1); /* q = (r * S + s) * Cg + c */
    if (k >= KP || q >= R * S * Cg) return;
    const long c = q % Cg, rs = q / Cg, s = rs % S, r = rs / S;
    Wt[q * KP + k] = k < K ? ld_f(Wsrc, w_t, filt_off(ff, k, c, r, s, K, Cg, R, S)) : 0.0f;
}

kernel void direct(gcptr X, int x_t, gcptr Wf, int w_t, global void *Y, int y_t, int nhwc, int ff, long groups,
                   CONV_SIZES, EPI_PARAMS) {
    const long yi = get_global_id(0);
    if (yi >= N * K * P * Q) return;
    long k, oh, ow, n;
    if (nhwc) {
        k = yi % K;
        long t = yi / K;
        ow = t % Q, t /= Q, oh = t % P, n = t / P;
    } else {
        ow = yi % Q;
        long t = yi / Q;
        oh = t % P, t /= P, k = t % K, n = t / K;
    }
    const long Cg = C / groups, Kg = K / groups, c0 = (k / Kg) * Cg;
    float acc = 0.0f;
    for (long r = 0; r < R; r++) {
        const long ih = oh * sh - pt + r * dh;
        if (ih < 0 || ih >= H) continue;
        for (long s = 0; s < S; s++) {
            const long iw = ow * sw - pl + s * dw;
            if (iw < 0 || iw >= W) continue;
            for (long c = 0; c < Cg; c++)
                acc = fma(ld_f(X, x_t, act_off(nhwc, n, c0 + c, ih, iw, C, H, W)),
                          ld_f(Wf, w_t, filt_off(ff, k, c, r, s, K, Cg, R, S)), acc);
        }
    }
    st_f(Y, y_t, yi, epilogue(acc, k, 0, 0, yi, EPI_PASS));
}

#ifdef VW
kernel void igemm(global const float *X, global const float *Wt, long KP, global void *Y, int y_t,
                  CONV_SIZES, EPI_PARAMS) {
    const long k0 = get_global_id(0) * VW, m0 = get_global_id(1) * RM, NPQ = N * P * Q;
    if (k0 >= K || m0 >= NPQ) return;
    long ih0[RM], iw0[RM], nb[RM];
    realv acc[RM];
    for (int r = 0; r < RM; r++) {
        const long m = m0 + r < NPQ ? m0 + r : NPQ - 1;
        const long ow = m % Q, t = m / Q, oh = t % P, n = t / P;
        ih0[r] = oh * sh - pt, iw0[r] = ow * sw - pl, nb[r] = n * H;
        acc[r] = (realv)0.0f;
    }
    for (long fr = 0; fr < R; fr++)
        for (long fs = 0; fs < S; fs++) {
            long xo[RM];
            for (int r = 0; r < RM; r++) {
                const long ih = ih0[r] + fr * dh, iw = iw0[r] + fs * dw;
                xo[r] = ih >= 0 && ih < H && iw >= 0 && iw < W ? ((nb[r] + ih) * W + iw) * C : -1;
            }
            global const float *wrow = Wt + (fr * S + fs) * C * KP + k0;
            long c = 0;
            for (; c + 4 <= C; c += 4) {
                const realv b0 = VLOADV(0, wrow + c * KP), b1 = VLOADV(0, wrow + (c + 1) * KP);
                const realv b2 = VLOADV(0, wrow + (c + 2) * KP), b3 = VLOADV(0, wrow + (c + 3) * KP);
                for (int r = 0; r < RM; r++) {
                    const float4 a = xo[r] >= 0 ? vload4(0, X + xo[r] + c) : (float4)0.0f;
                    acc[r] = fma((realv)a.s0, b0, acc[r]);
                    acc[r] = fma((realv)a.s1, b1, acc[r]);
                    acc[r] = fma((realv)a.s2, b2, acc[r]);
                    acc[r] = fma((realv)a.s3, b3, acc[r]);
                }
            }
            for (; c < C; c++) {
                const realv bv = VLOADV(0, wrow + c * KP);
                for (int r = 0; r < RM; r++)
                    if (xo[r] >= 0) acc[r] = fma((realv)X[xo[r] + c], bv, acc[r]);
            }
        }
    for (int r = 0; r < RM && m0 + r < NPQ; r++) {
        float out[VW];
        VSTOREV(acc[r], 0, out);
        for (int v = 0; v < VW && k0 + v < K; v++) {
            const long yi = (m0 + r) * K + k0 + v;
            st_f(Y, y_t, yi, epilogue(out[v], k0 + v, 0, 0, yi, EPI_PASS));
        }
    }
}
#endif
