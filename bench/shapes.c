#include "shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `name` as a path, else the set <dir>/<op>_<name>.txt; NULL with a message. */
static FILE *open_set(const char *name, const char *dir, const char *op) {
    char path[1024];
    FILE *f = fopen(name, "r");
    if (!f) {
        snprintf(path, sizeof path, "%s/%s_%s.txt", dir, op, name);
        f = fopen(path, "r");
    }
    if (!f) fprintf(stderr, "tessera-bench: no %s shape set '%s' (not a file, nor %s/%s_%s.txt)\n", op, name, dir, op, name);
    return f;
}

int shapes_read_gemm(const char *name, const char *dir, gemm_shape **out) {
    FILE *f = open_set(name, dir, "gemm");
    if (!f) return -1;
    int n = 0, cap = 16, line_no = 0;
    gemm_shape *v = malloc(sizeof *v * (size_t)cap);
    char line[512];
    while (v && fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        long long m, nn, k;
        char tr[8] = "NN";
        int got = sscanf(line, "%lld %lld %lld %7s", &m, &nn, &k, tr);
        if (got <= 0) continue;
        if (got < 3 || m < 1 || nn < 1 || k < 1 || strlen(tr) != 2 || !strchr("NT", tr[0]) || !strchr("NT", tr[1])) {
            fprintf(stderr, "tessera-bench: %s:%d: expected `m n k [NN|NT|TN|TT]`\n", name, line_no);
            free(v);
            fclose(f);
            return -1;
        }
        if (n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2));
        if (!v) break;
        v[n++] = (gemm_shape){m, nn, k, tr[0] == 'T', tr[1] == 'T'};
    }
    fclose(f);
    if (!v) return -1;
    *out = v;
    return n;
}

int shapes_read_attention(const char *path, attn_shape **out) {
    static const char *const modes[] = {"none", "top_left", "bottom_right"};
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open the attention shape file '%s'\n", path);
        return -1;
    }
    int n = 0, cap = 16, line_no = 0;
    attn_shape *v = malloc(sizeof *v * (size_t)cap);
    char line[512];
    while (v && fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        long long x[6];
        char mode[32] = "none";
        int got = sscanf(line, "%lld %lld %lld %lld %lld %lld %31s", &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], mode);
        if (got <= 0) continue;
        int causal = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(mode, modes[i])) causal = i;
        if (got < 6 || causal < 0) {
            fprintf(stderr, "%s:%d: expected `batch heads_q heads_kv seq_q seq_kv head_dim [none|top_left|bottom_right]`\n",
                    path, line_no);
            free(v);
            fclose(f);
            return -1;
        }
        if (n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2));
        if (v) v[n++] = (attn_shape){x[0], x[1], x[2], x[3], x[4], x[5], causal};
    }
    fclose(f);
    if (!v) return -1;
    *out = v;
    return n;
}

int shapes_read_conv(const char *name, const char *dir, conv_shape **out) {
    FILE *f = open_set(name, dir, "conv");
    if (!f) return -1;
    int n = 0, cap = 32, line_no = 0;
    conv_shape *v = malloc(sizeof *v * (size_t)cap);
    char line[512];
    while (v && fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        conv_shape c;
        memset(&c, 0, sizeof c);
        long long x[9];
        char res[8] = "";
        int got = sscanf(line, "%31s %lld %lld %lld %lld %lld %lld %lld %lld %lld %7s", c.name, &x[0], &x[1], &x[2],
                         &x[3], &x[4], &x[5], &x[6], &x[7], &x[8], res);
        if (got <= 0) continue;
        if (got < 10 || x[0] < 1 || x[1] < 1 || x[2] < 1 || x[3] < 1 || x[4] < 1 || x[5] < 1 || x[6] < 1 || x[7] < 0 ||
            x[8] < 1 || (got == 11 && strcmp(res, "res"))) {
            fprintf(stderr, "tessera-bench: %s:%d: expected `name c h w k r s stride pad groups [res]`\n", name, line_no);
            free(v);
            fclose(f);
            return -1;
        }
        c.c = x[0], c.h = x[1], c.w = x[2], c.k = x[3], c.r = x[4], c.s = x[5], c.stride = x[6], c.pad = x[7];
        c.groups = x[8], c.residual = got == 11;
        if (n == cap) v = realloc(v, sizeof *v * (size_t)(cap *= 2));
        if (v) v[n++] = c;
    }
    fclose(f);
    if (!v) return -1;
    *out = v;
    return n;
}
