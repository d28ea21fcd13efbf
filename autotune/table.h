/* The tuning table: one text file per device, read once per process, looked
 * up on every dispatch; written by tessera-tune.
 *
 * File format (version 1), one item a line, '#' starts a comment line:
 *
 *   @format 1                        validators: every one must match
 *   @library 0.1.0                   tsr_version_string()
 *   @kernels 5d41402abc4b2a76        hash of the kernel and arch sources
 *   @backend cpu
 *   @arch x86_avx2                   ctx->arch (the kernels this context runs)
 *   @device AMD EPYC 7B13 64-Core Processor
 *   @compute_units 2
 *   @driver                          may be empty
 *   gemm f32,f32,f32 NT epi=none m=128,n=4096,k=4096,batch=1 gemm.x86_avx2.f32 mc=144,kc=256,nc=4032,pack_b=1,batch_parallel=0 time_us=812.5 default_us=901.0 spread=1.2 tuned=1732300000
 *
 * A record is whitespace-separated: op, dtypes, layout, variant, shape
 * (name=int64 list), kernel, knobs (name=int list, "-" for none), then
 * name=value metrics: time_us and default_us (required), spread (percent),
 * tuned (unix seconds). Fields after those are kept verbatim, as are records
 * of an op this version does not know. Unknown @ lines are kept too.
 *
 * Anything else (a missing validator or field, a bad number, a control
 * character, a line over TSR_TABLE_MAX_LINE bytes, a file that does not end
 * in a newline: truncated) rejects the whole table with one reason.
 *
 * Two records with the same key (class + shape): the one tuned later wins,
 * then the faster one. Merging writes apply the same rule. */
#ifndef TSR_TABLE_H
#define TSR_TABLE_H

#include "internal.h"
#include "problem_key.h"

#define TSR_TABLE_FORMAT 1
#define TSR_TABLE_MAX_LINE 4096
#define TSR_TABLE_MAX_BYTES (64u << 20)
#define TSR_TABLE_SUFFIX ".table"

typedef struct tsr_table tsr_table;

/* What a table must have been measured on. */
typedef struct tsr_device_fp {
    char backend[16];
    char arch[32];
    char name[128];
    char driver[64];
    int compute_units;
} tsr_device_fp;

void tsr_device_fp_from_context(const tsr_context *ctx, tsr_device_fp *fp);
/* "cpu-x86_avx2-AMD_EPYC_7B13_64-Core_Processor-2cu.table": [A-Za-z0-9._-] only. */
void tsr_table_file_name(const tsr_device_fp *fp, char *out, size_t n);
/* The hash of the kernel sources this library was built from (generated). */
extern const char tsr_kernel_hash[];

/* The validator lines for fp, each ending in '\n'. */
size_t tsr_table_header(const tsr_device_fp *fp, char *out, size_t n);

/* Parses text (len bytes, need not be NUL-terminated). expect == NULL
 * accepts any device (format, library and kernels must still match).
 * TSR_ERR_INVALID_ARGUMENT: malformed; TSR_ERR_NOT_SUPPORTED: a validator
 * differs. why gets the one reason ("line 12: ..."). */
tsr_status tsr_table_parse(const char *text, size_t len, const tsr_device_fp *expect,
                           tsr_table **out, char *why, size_t why_len);
/* Reads and parses a file. TSR_ERR_IO when it cannot be read (ENOENT too). */
tsr_status tsr_table_read(const char *path, const tsr_device_fp *expect, tsr_table **out,
                          char *why, size_t why_len);
void tsr_table_free(tsr_table *t);

/* The device a table says it was measured on. */
const tsr_device_fp *tsr_table_device(const tsr_table *t);
/* Records, unknown ones included (duplicates resolved), in file order. */
int tsr_table_count(const tsr_table *t);
const char *tsr_table_line(const tsr_table *t, int i);
/* A parsed view of record i; false for a record kept verbatim (unknown op). */
typedef struct tsr_table_rec_view {
    const char *op, *dtypes, *layout, *variant, *shape, *kernel, *knobs;
    int ndims;
    const char *dim_names[TSR_PKEY_MAX_DIMS];
    int64_t dims[TSR_PKEY_MAX_DIMS];
    double time_us, default_us, spread;
    int64_t tuned;
} tsr_table_rec_view;
bool tsr_table_record(const tsr_table *t, int i, tsr_table_rec_view *v);

/* The whole table as text (header for t's device, then the records, known
 * ones sorted by class and shape). malloc'd; NULL when out of memory. */
char *tsr_table_serialize(const tsr_table *t, size_t *len);

/* One record line (no newline) for a tuned schedule of kernel k. */
tsr_status tsr_table_format_record(const tsr_pkey *key, const tsr_kernel *k, const tsr_schedule *s,
                                   double time_us, double default_us, double spread,
                                   int64_t tuned, char *out, size_t n);

/* ------------------------------------------------------------------ lookup */

typedef enum tsr_table_hit {
    TSR_TABLE_MISS = 0,
    TSR_TABLE_EXACT = 1,   /* this shape was tuned */
    TSR_TABLE_NEAREST = 2  /* the nearest tuned shape of the same class */
} tsr_table_hit;

/* Nearest shapes farther than this (Euclidean distance of the natural logs
 * of the dims) are not trusted: the heuristic is used instead. */
#define TSR_TABLE_NEAREST_MAX 3.0

/* A record lends its schedule to other shapes only where it beat the
 * kernel's heuristic by this factor at its own shape (default_us /
 * time_us): a tie there says nothing of other sizes, where the heuristic
 * adapts and a fixed blocking may not. tessera-tune --quick on a Zen 5 VM
 * kept mc=48,kc=256,nc=720 for 512^3 at 1.03x, and 1024^3 and 2048^3 then
 * ran it at 0.83x and 0.65x their heuristic's rate. */
#define TSR_TABLE_NEAREST_MIN_GAIN 1.10

/* The schedule for (p, k) from t: exact key first, then the nearest shape of
 * the same class. Records whose knobs are not k's current knob space (stale)
 * and schedules k->schedule_valid() rejects for p are skipped. ctx may be
 * NULL (schedule_valid is then not asked). */
tsr_table_hit tsr_table_lookup(const tsr_table *t, const tsr_problem *p, const tsr_context *ctx,
                               const tsr_kernel *k, tsr_schedule *s);

/* Knob text ("mc=144,kc=256") to a schedule of k: false when the names or
 * values are not exactly k's knob space (a stale record). */
bool tsr_table_knobs_resolve(const char *knobs, const tsr_kernel *k, tsr_schedule *s);
/* A schedule of k as knob text ("-" when k has no knobs). */
size_t tsr_table_knobs_format(const tsr_kernel *k, const tsr_schedule *s, char *out, size_t n);

/* ---------------------------------------------------------------- writing */

typedef struct tsr_table_write_report {
    char path[600];
    int added, replaced, kept;  /* new keys, keys updated, new records that lost the merge */
    int total;                  /* records in the file written */
    char discarded[600];        /* an old table that was invalid: why, and where it went */
} tsr_table_write_report;

/* Merges the record lines into dir's table for fp: under an flock on
 * <file>.lock, re-reads the table, merges by key (tuned later wins, then
 * faster), keeps unknown records, writes a temp file in dir, fsyncs it and
 * renames it over the table. An existing table that fails validation is
 * moved to <file>.rejected first. dir is created if missing.
 * TSR_ERR_IO (with tsr_last_error) when dir cannot be written;
 * TSR_ERR_INVALID_ARGUMENT when a line is not a valid record. */
tsr_status tsr_table_write_merged(const char *dir, const tsr_device_fp *fp, const char *const *lines,
                                  int n, tsr_table_write_report *report);

/* ------------------------------------------------ locations, the context */

#define TSR_TABLE_MAX_DIRS 3
/* Directories searched, best first: TESSERA_TABLE_DIR alone when set, else
 * the user's ($XDG_CACHE_HOME/tessera or ~/.cache/tessera) then the
 * system's (<prefix>/share/tessera). Returns the count. */
int tsr_table_search_dirs(char dirs[][512], int max);
/* Where tessera-tune writes by default: TESSERA_TABLE_DIR, else the user's. */
tsr_status tsr_table_default_dir(char *out, size_t n);
/* TESSERA_TUNE=off (or 0, no, false): ignore every table. */
bool tsr_table_disabled_by_env(void);

/* Loads (once per process per device and file version) the table for ctx
 * and fills ctx->table, table_path and table_status. Never fails. */
void tsr_context_attach_table(tsr_context *ctx);
void tsr_context_detach_table(tsr_context *ctx);

/* For tsr_dispatch: true when ctx's table has a schedule for (p, k). */
bool tsr_table_schedule(const tsr_context *ctx, const tsr_problem *p, const tsr_kernel *k,
                        tsr_schedule *s);

#endif
