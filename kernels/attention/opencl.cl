/* OpenCL attention forward, tiled with an online softmax (FlashAttention's
 * scheme). A work-group of BQ work-items owns BQ query rows of one (batch,
 * head); key/value blocks of BK rows are staged in local memory as f32 and
 * every work-item scores its row against the block, rescales its running
 * output once per block and accumulates. HD (head_dim) and BK are compile
 * time; dtypes, strides, causal mode, mask and lse are arguments.
 * Semantics are the reference's: a row that sees no key gives o = 0 and
 * lse = -inf; a NaN logit makes its row NaN. */
kernel void flash(gcptr Qp, gcptr Kp, gcptr Vp, global void *Op, int dt, long4 qs, long4 ks, long4 vs, long4 os,
                  long Hq, long Hkv, long Sq, long Skv, float scale, int causal, gcptr Mp, int m_t, long4 ms,
                  global float *Lse) {
    local float Ks[BK * HD], Vs[BK * HD];
    const long h = get_group_id(1), b = get_group_id(2), hk = h / (Hq / Hkv);
    const long i = (long)get_group_id(0) * BQ + get_local_id(0);
    const long iq = i < Sq ? i : Sq - 1;
    /* keys visible to row r: [0, vis(r)) */
#define VIS(r) (causal == 1 ? min((r) + 1, Skv) : causal == 2 ? clamp((r) + 1 + Skv - Sq, 0L, Skv) : Skv)
    const long end = VIS(iq);
    const long last = min((long)get_group_id(0) * BQ + BQ - 1, Sq - 1);
    const long block_end = VIS(last); /* uniform over the work-group: the largest end */
    float q[HD], o[HD];
    const long qo = b * qs.s0 + h * qs.s1 + iq * qs.s2;
    for (int e = 0; e < HD; e++) q[e] = ld_f(Qp, dt, qo + e) * scale, o[e] = 0.0f;
    const long ko = b * ks.s0 + hk * ks.s1, vo = b * vs.s0 + hk * vs.s1;
    const long mo = b * ms.s0 + h * ms.s1 + iq * ms.s2;
    float m = -INFINITY, l = 0.0f;
    int nan_seen = 0;
    for (long j0 = 0; j0 < block_end; j0 += BK) {
        for (int idx = get_local_id(0); idx < BK * HD; idx += BQ) {
            const int jj = idx / HD, e = idx % HD;
            const long j = j0 + jj;
            Ks[idx] = j < Skv ? ld_f(Kp, dt, ko + j * ks.s2 + e) : 0.0f;
            Vs[idx] = j < Skv ? ld_f(Vp, dt, vo + j * vs.s2 + e) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        float sc[BK];
        float bm = -INFINITY;
        for (int jj = 0; jj < BK; jj++) {
            float s = 0.0f;
            for (int e = 0; e < HD; e++) s = fma(q[e], Ks[jj * HD + e], s);
            const long j = j0 + jj;
            if (Mp && j < end) s += ld_f(Mp, m_t, mo + j);
            if (j >= end) s = -INFINITY;
            if (isnan(s)) nan_seen = 1;
            sc[jj] = s;
            bm = fmax(bm, s);
        }
        if (bm > -INFINITY) {
            const float mn = fmax(m, bm), corr = exp(m - mn);
            l *= corr;
            for (int e = 0; e < HD; e++) o[e] *= corr;
            for (int jj = 0; jj < BK; jj++) {
                if (sc[jj] == -INFINITY) continue;
                const float pj = exp(sc[jj] - mn);
                l += pj;
                for (int e = 0; e < HD; e++) o[e] = fma(pj, Vs[jj * HD + e], o[e]);
            }
            m = mn;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i >= Sq) return;
    const bool empty = m == -INFINITY;
    const float inv = empty ? 0.0f : 1.0f / l;
    const long oo = b * os.s0 + h * os.s1 + i * os.s2;
    for (int e = 0; e < HD; e++) st_f(Op, dt, oo + e, nan_seen ? NAN : empty ? 0.0f : o[e] * inv);
    if (Lse) Lse[(b * Hq + h) * Sq + i] = nan_seen ? NAN : empty ? -INFINITY : m + log(l);
#undef VIS
}
