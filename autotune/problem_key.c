/* Problem keys for every op. Hand-rolled appends instead of snprintf: the
 * key is built on every dispatch that consults a table, which must cost well
 * under a microsecond. */
#include "problem_key.h"

#include <stdio.h>
#include <string.h>

typedef struct sbuf {
    char *p;
    size_t n, len; /* capacity, length (may exceed n - 1: truncated) */
} sbuf;

static void put(sbuf *b, const char *s) {
    for (; *s; s++, b->len++)
        if (b->len + 1 < b->n) b->p[b->len] = *s;
    if (b->n) b->p[b->len < b->n ? b->len : b->n - 1] = '\0';
}

static void put_i64(sbuf *b, int64_t v) {
    char tmp[24];
    int i = (int)sizeof tmp - 1;
    tmp[i] = '\0';
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[--i] = '-';
    put(b, tmp + i);
}

static void start(sbuf *b, char *p, size_t n) {
    b->p = p, b->n = n, b->len = 0;
    if (n) p[0] = '\0';
}

static void dtype_list(char *out, size_t n, const tsr_dtype *t, int count) {
    sbuf b;
    start(&b, out, n);
    for (int i = 0; i < count; i++) {
        if (i) put(&b, ",");
        put(&b, tsr_dtype_name(t[i]));
    }
}

static const char *act_name(tsr_activation a) {
    static const char *names[] = {"none", "relu", "gelu_erf", "gelu_tanh", "silu", "sigmoid", "tanh"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "act?";
}

/* "epi=none" or "epi=bias+gelu_tanh+residual"; bias_along_m marks the
 * column-major rewrite, whose bias runs along the other dimension. */
static void epilogue_variant(sbuf *b, const tsr_epilogue *e, bool bias_along_m) {
    put(b, "epi=");
    if (e->num_steps <= 0) put(b, "none");
    for (int i = 0; i < e->num_steps && i < TSR_MAX_EPILOGUE_STEPS; i++) {
        if (i) put(b, "+");
        const tsr_epilogue_step *s = &e->steps[i];
        switch (s->op) {
        case TSR_EPI_BIAS: put(b, bias_along_m ? "bias_m" : "bias"); break;
        case TSR_EPI_ACTIVATION: put(b, act_name(s->activation)); break;
        case TSR_EPI_RESIDUAL: put(b, "residual"); break;
        default: put(b, "step?"); break;
        }
        /* A non-f32 bias/residual takes another path in some kernels. */
        if (s->op != TSR_EPI_ACTIVATION && s->dtype != TSR_F32) {
            put(b, ":");
            put(b, tsr_dtype_name(s->dtype));
        }
    }
}

static void set_dims(tsr_pkey *k, int n, const char *const *names, const int64_t *v) {
    k->ndims = n;
    for (int i = 0; i < n; i++) k->dim_names[i] = names[i], k->dims[i] = v[i];
}

static void key_gemm(const tsr_gemm_problem *g, tsr_pkey *k) {
    const tsr_gemm_desc *d = &g->d;
    tsr_dtype t[3] = {d->a_dtype, d->b_dtype, d->c_dtype};
    dtype_list(k->dtypes, sizeof k->dtypes, t, 3);
    k->layout[0] = d->trans_a ? 'T' : 'N';
    k->layout[1] = d->trans_b ? 'T' : 'N';
    k->layout[2] = '\0';
    sbuf b;
    start(&b, k->variant, sizeof k->variant);
    epilogue_variant(&b, &d->epilogue, g->bias_along_m);
    static const char *const names[] = {"m", "n", "k", "batch"};
    int64_t v[4] = {d->m, d->n, d->k, d->batch};
    set_dims(k, 4, names, v);
}

static void key_conv(const tsr_conv2d_problem *c, tsr_pkey *k) {
    const tsr_conv2d_desc *d = &c->d;
    tsr_dtype t[3] = {d->x_dtype, d->w_dtype, d->y_dtype};
    dtype_list(k->dtypes, sizeof k->dtypes, t, 3);
    static const char *const fmt[] = {"NHWC", "NCHW"};
    static const char *const ffmt[] = {"OHWI", "OIHW", "HWIO", "PACKED"};
    sbuf b;
    start(&b, k->layout, sizeof k->layout);
    put(&b, (unsigned)d->format < 2 ? fmt[d->format] : "fmt?");
    put(&b, ".");
    put(&b, (unsigned)d->filter_format < 4 ? ffmt[d->filter_format] : "filt?");
    /* Filter size, stride, padding and dilation pick the code path; the
     * group structure too (dense, depthwise, grouped). */
    start(&b, k->variant, sizeof k->variant);
    put(&b, "rs=");
    put_i64(&b, d->r);
    put(&b, "x");
    put_i64(&b, d->s);
    put(&b, ",st=");
    put_i64(&b, d->stride_h);
    put(&b, "x");
    put_i64(&b, d->stride_w);
    put(&b, ",pad=");
    put_i64(&b, d->pad_top);
    put(&b, ".");
    put_i64(&b, d->pad_bottom);
    put(&b, ".");
    put_i64(&b, d->pad_left);
    put(&b, ".");
    put_i64(&b, d->pad_right);
    put(&b, ",dil=");
    put_i64(&b, d->dilation_h);
    put(&b, "x");
    put_i64(&b, d->dilation_w);
    put(&b, ",g=");
    put(&b, d->groups == 1 ? "dense" : (d->groups == d->c && d->groups == d->k) ? "depthwise" : "grouped");
    put(&b, ",");
    epilogue_variant(&b, &d->epilogue, false);
    static const char *const names[] = {"n", "c", "h", "w", "k", "groups"};
    int64_t v[6] = {d->n, d->c, d->h, d->w, d->k, d->groups};
    set_dims(k, 6, names, v);
}

static void key_attention(const tsr_attention_problem *a, tsr_pkey *k) {
    const tsr_attention_desc *d = &a->d;
    tsr_dtype t[2] = {d->dtype, d->mask ? d->mask_dtype : d->dtype};
    dtype_list(k->dtypes, sizeof k->dtypes, t, d->mask ? 2 : 1);
    /* BHSD when the sequence stride is head_dim and the head stride a whole
     * sequence; anything else is "strided". */
    bool bhsd = d->q_strides[2] == d->head_dim && d->q_strides[1] == d->seq_q * d->head_dim;
    snprintf(k->layout, sizeof k->layout, "%s", bhsd ? "BHSD" : "strided");
    static const char *const causal[] = {"none", "top_left", "bottom_right"};
    sbuf b;
    start(&b, k->variant, sizeof k->variant);
    put(&b, "d=");
    put_i64(&b, d->head_dim);
    put(&b, ",causal=");
    put(&b, (unsigned)d->causal < 3 ? causal[d->causal] : "causal?");
    put(&b, d->mask ? ",mask" : "");
    put(&b, d->lse ? ",lse" : "");
    static const char *const names[] = {"batch", "heads_q", "heads_kv", "seq_q", "seq_kv"};
    int64_t v[5] = {d->batch, d->heads_q, d->heads_kv, d->seq_q, d->seq_kv};
    set_dims(k, 5, names, v);
}

static void key_chain(const tsr_chain_problem *c, tsr_pkey *k) {
    tsr_dtype t[2 + TSR_MAX_CHAIN_OPERANDS];
    int nt = 0;
    t[nt++] = c->x.dtype;
    for (int i = 0; i < c->chain.num_operands && i < TSR_MAX_CHAIN_OPERANDS; i++)
        t[nt++] = c->chain.operands[i].dtype;
    t[nt++] = c->y.dtype;
    dtype_list(k->dtypes, sizeof k->dtypes, t, nt);
    /* Layout: contiguous or not, and which operands broadcast. */
    int64_t elems = 1, inner = c->y.ndim > 0 ? c->y.shape[c->y.ndim - 1] : 1;
    bool contiguous = true;
    int64_t expect = 1;
    for (int i = c->y.ndim - 1; i >= 0; i--) {
        elems = elems * (c->y.shape[i] > 0 ? c->y.shape[i] : 1);
        if (c->x.strides[i] != expect || c->y.strides[i] != expect) contiguous = false;
        expect *= c->y.shape[i] > 0 ? c->y.shape[i] : 1;
    }
    sbuf b;
    start(&b, k->layout, sizeof k->layout);
    put(&b, contiguous ? "dense" : "strided");
    for (int i = 0; i < c->chain.num_operands && i < TSR_MAX_CHAIN_OPERANDS; i++) {
        bool bcast = false;
        for (int d = 0; d < c->y.ndim; d++)
            if (c->operands[i] && c->chain.operands[i].strides[d] == 0 && c->y.shape[d] > 1) bcast = true;
        put(&b, bcast ? ".b" : ".f");
    }
    /* The steps, two or three characters each: u<op>, s<op>, l<op>, t<op>, r<op>. */
    static const char kind[] = {'u', 's', 'l', 't', 'r'};
    start(&b, k->variant, sizeof k->variant);
    for (int i = 0; i < c->chain.num_steps && i < TSR_MAX_CHAIN_STEPS; i++) {
        const tsr_chain_step *s = &c->chain.steps[i];
        char tag[2] = {(unsigned)s->kind < 5 ? kind[s->kind] : '?', '\0'};
        if (i) put(&b, ".");
        put(&b, tag);
        put_i64(&b, s->kind == TSR_STEP_UNARY ? (int64_t)s->unary : (int64_t)s->binary);
    }
    if (c->chain.num_steps <= 0) put(&b, "copy");
    static const char *const names[] = {"elems", "inner"};
    int64_t v[2] = {elems, inner};
    set_dims(k, 2, names, v);
}

static void key_rowwise(const tsr_rowwise_problem *r, tsr_pkey *k) {
    tsr_dtype t[2] = {r->d.x_dtype, r->d.y_dtype};
    dtype_list(k->dtypes, sizeof k->dtypes, t, 2);
    bool dense = r->d.x_row_stride == r->d.cols && r->d.y_row_stride == r->d.cols;
    snprintf(k->layout, sizeof k->layout, "%s", dense ? "dense" : "strided");
    snprintf(k->variant, sizeof k->variant, "%s%s", r->gamma ? "gamma" : "-", r->beta ? "+beta" : "");
    static const char *const names[] = {"rows", "cols"};
    int64_t v[2] = {r->d.rows, r->d.cols};
    set_dims(k, 2, names, v);
}

tsr_status tsr_problem_key(const tsr_problem *p, tsr_pkey *k) {
    memset(k, 0, sizeof *k);
    k->op = p->op;
    switch (p->op) {
    case TSR_OP_GEMM: key_gemm(&p->u.gemm, k); return TSR_OK;
    case TSR_OP_CONV2D: key_conv(&p->u.conv, k); return TSR_OK;
    case TSR_OP_ATTENTION: key_attention(&p->u.attention, k); return TSR_OK;
    case TSR_OP_CHAIN: key_chain(&p->u.chain, k); return TSR_OK;
    case TSR_OP_SOFTMAX:
    case TSR_OP_LAYERNORM:
    case TSR_OP_RMSNORM: key_rowwise(&p->u.rowwise, k); return TSR_OK;
    default: break;
    }
    return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "problem_key: op (%d) is not a tsr_op", (int)p->op);
}

size_t tsr_pkey_format_dims(int ndims, const char *const *names, const int64_t *dims, char *out,
                            size_t n) {
    sbuf b;
    start(&b, out, n);
    for (int i = 0; i < ndims; i++) {
        if (i) put(&b, ",");
        put(&b, names[i]);
        put(&b, "=");
        put_i64(&b, dims[i]);
    }
    return b.len < n ? b.len : (n ? n - 1 : 0);
}

size_t tsr_pkey_shape(const tsr_pkey *k, char *out, size_t n) {
    return tsr_pkey_format_dims(k->ndims, k->dim_names, k->dims, out, n);
}
