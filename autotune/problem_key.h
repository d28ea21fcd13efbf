/* Problem keys: the canonical text that names a problem in the tuning table.
 *
 * A key has a class (op, dtypes, layout, variant: everything a schedule's
 * legality and shape-independent speed depend on) and a shape (named int64
 * dims). Exact lookups match class + shape; nearest lookups search the
 * shapes of one class in log-space. Tables store these strings, so changing
 * how a key is spelled makes old records unreachable: bump the table format. */
#ifndef TSR_PROBLEM_KEY_H
#define TSR_PROBLEM_KEY_H

#include "internal.h"

#define TSR_PKEY_MAX_DIMS 8

typedef struct tsr_pkey {
    tsr_op op;
    char dtypes[48];  /* "f32,f32,f32": every operand in the op's order */
    char layout[32];  /* GEMM "NT" (row-major after normalisation), conv "NHWC.OHWI" */
    char variant[128]; /* what else changes the code path: "epi=bias+relu" */
    int ndims;
    const char *dim_names[TSR_PKEY_MAX_DIMS];
    int64_t dims[TSR_PKEY_MAX_DIMS];
} tsr_pkey;

/* Fills k from a validated problem; TSR_ERR_INVALID_ARGUMENT for an op
 * this version cannot key (never for the ops in tsr_op). */
tsr_status tsr_problem_key(const tsr_problem *p, tsr_pkey *k);

/* "m=64,n=64,k=64,batch=1". Returns the length (truncated to n - 1). */
size_t tsr_pkey_shape(const tsr_pkey *k, char *out, size_t n);

/* Canonical spellings of the pieces shared with the table parser. */
size_t tsr_pkey_format_dims(int ndims, const char *const *names, const int64_t *dims, char *out,
                            size_t n);

#endif
