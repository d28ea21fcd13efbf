/* Error reporting as the BLAS world expects it.
 *
 * Reference BLAS calls XERBLA, which an application may replace with its
 * own (the BLAS test programs and LAPACK's testers do, to check INFO), and
 * CBLAS calls cblas_xerbla. Both are weak references here: when the process
 * has one (the system BLAS's, or the application's own), it is called, as
 * the BLAS we stand in front of would have. When none is loaded, we print
 * the reference messages ourselves, to stderr, and return: a drop-in must
 * not end the process of a program that did not ask for that. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"

/* Fortran passes the string's length as a trailing hidden argument
 * (size_t since gfortran 8). */
extern void xerbla_(const char *srname, const int *info, size_t srname_len) __attribute__((weak));
extern void cblas_xerbla(int info, const char *rout, const char *form, ...) __attribute__((weak));

void tsrb_xerbla(const char *srname, int info) {
    if (xerbla_) {
        xerbla_(srname, &info, strlen(srname));
        return;
    }
    /* Reference XERBLA's text (" ** On entry to SGEMM  parameter number  8
     * had an illegal value"), with the name padded to 6 as OpenBLAS does. */
    fprintf(stderr, " ** On entry to %-6s parameter number %2d had an illegal value\n", srname, info);
}

void tsrb_cblas_xerbla(int info, const char *rout, const char *form, ...) {
    va_list ap;
    va_start(ap, form);
    if (cblas_xerbla) {
        /* netlib's takes the message as varargs; pass it pre-formatted. */
        char msg[256];
        vsnprintf(msg, sizeof msg, form, ap);
        va_end(ap);
        cblas_xerbla(info, rout, "%s", msg);
        return;
    }
    /* netlib cblas_xerbla's text, then the routine's own detail line. */
    char line[320];
    int len = snprintf(line, sizeof line, "Parameter %d to routine %s was incorrect\n", info, rout);
    if (len > 0 && (size_t)len < sizeof line) vsnprintf(line + len, sizeof line - (size_t)len, form, ap);
    va_end(ap);
    fputs(line, stderr);
}
