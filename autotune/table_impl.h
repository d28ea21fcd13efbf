/* The in-memory table, shared by the parser, the lookup and the writer. */
#ifndef TSR_TABLE_IMPL_H
#define TSR_TABLE_IMPL_H

#include "table.h"

typedef struct tsr_trec {
    char *mem;          /* one block: the strings below point into it */
    const char *line;   /* the record as read, without its newline */
    const char *cls;    /* "op dtypes layout variant kernel" (known records) */
    const char *key;    /* cls "|" canonical shape */
    uint64_t key_hash, cls_hash;
    bool known;
    tsr_table_rec_view v;
    double logd[TSR_PKEY_MAX_DIMS]; /* ln(max(dim, 1)) */
    uint64_t dims_sig;  /* hash of the dim names: shapes comparable in log-space */
    int num_knobs;      /* parsed knobs ("-": none) */
    const char *knob_names[TSR_MAX_KNOBS];
    int knob_values[TSR_MAX_KNOBS];
} tsr_trec;

typedef struct tsr_tgroup {
    uint64_t hash;
    int first, count; /* into members[] */
} tsr_tgroup;

struct tsr_table {
    uint64_t serial;     /* unique in the process: lookup memos name tables by it */
    tsr_device_fp fp;
    char **extra_header; /* unknown @ lines, verbatim */
    int num_extra_header;
    tsr_trec *recs;
    int n;
    /* open addressing, power-of-two sizes, -1 = empty */
    int *slots;
    size_t num_slots;
    tsr_tgroup *groups; /* count == 0: empty */
    size_t num_groups;
    int *members;       /* record indices grouped by class */
};

uint64_t tsr_table_hash(const char *s, size_t n);
/* Hash of "name,name,..." as the records' dims_sig. */
uint64_t tsr_table_dims_sig(int ndims, const char *const *names);

#endif
