/* The tiled OpenCL GEMM body, shared by GEMM (kernels/gemm/opencl.cl) and
 * the implicit-GEMM convolution (kernels/conv/opencl.cl). The includer
 * defines TILED_ARGS (the kernel's parameters), TILE_M/TILE_N/TILE_K (the
 * problem extents, expressions of the arguments), LOAD_A(b, i, q) and
 * LOAD_B(b, q, j) (f32 values, 0 outside the problem), STORE(b, i, j, acc),
 * and A_KFAST / B_KFAST (1 when k is the contiguous index in memory: the
 * local-memory fill then walks k fastest).
 *
 * Knobs: a work-group of NDIMC x MDIMC work-items computes an MWG x NWG
 * tile of C, staging KWG-deep slices of A and B in local memory; each
 * work-item keeps an MWI x NWI register block, its rows MDIMC apart and its
 * columns in groups of VW (a vector) NDIMC*VW apart, so neighbouring
 * work-items touch neighbouring columns (coalesced on GPUs, vectorised
 * across work-items by PoCL). */
#define MWI (MWG / MDIMC)
#define NWV (NWG / (NDIMC * VW)) /* vectors per work-item along n */
#define WGS (MDIMC * NDIMC)

kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1)))
void tiled(TILED_ARGS) {
    local float As[KWG * MWG];
    local float Bs[KWG * NWG];
    const int tn = get_local_id(0), tm = get_local_id(1), tid = tm * NDIMC + tn;
    const long n0 = (long)get_group_id(0) * NWG, m0 = (long)get_group_id(1) * MWG;
    const long b = get_group_id(2);
    realv acc[MWI][NWV];
    for (int i = 0; i < MWI; i++)
        for (int j = 0; j < NWV; j++) acc[i][j] = (realv)0.0f;

    for (long k0 = 0; k0 < TILE_K; k0 += KWG) {
        /* the k-contiguous operand is filled k fastest (coalesced reads) */
#define FILL(S, XWG, KFAST, LOAD)                                   \
        for (int idx = tid; idx < KWG * XWG; idx += WGS) {          \
            const int kk = KFAST ? idx % KWG : idx / XWG;           \
            const int xx = KFAST ? idx / KWG : idx % XWG;           \
            S[kk * XWG + xx] = LOAD;                                \
        }
        FILL(As, MWG, A_KFAST, LOAD_A(b, m0 + xx, k0 + kk))
        FILL(Bs, NWG, B_KFAST, LOAD_B(b, k0 + kk, n0 + xx))
#undef FILL
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < KWG; kk++) {
            float a[MWI];
            realv bv[NWV];
            for (int i = 0; i < MWI; i++) a[i] = As[kk * MWG + tm + i * MDIMC];
            for (int j = 0; j < NWV; j++) bv[j] = VLOADV(tn + j * NDIMC, Bs + kk * NWG);
            for (int i = 0; i < MWI; i++)
                for (int j = 0; j < NWV; j++) acc[i][j] = fma((realv)a[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < MWI; i++) {
        const long row = m0 + tm + i * MDIMC;
        if (row >= TILE_M) continue;
        for (int j = 0; j < NWV; j++) {
            float out[VW];
            VSTOREV(acc[i][j], 0, out);
            const long col0 = n0 + (long)(tn + j * NDIMC) * VW;
            for (int v = 0; v < VW; v++)
                if (col0 + v < TILE_N) STORE(b, row, col0 + v, out[v]);
        }
    }
}
