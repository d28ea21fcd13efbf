/* Thread-local error messages and status names. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[512];
static _Thread_local const char *last_kernel = "";

const char *tsr_status_string(tsr_status status) {
    switch (status) {
    case TSR_OK: return "TSR_OK";
    case TSR_ERR_INVALID_ARGUMENT: return "TSR_ERR_INVALID_ARGUMENT";
    case TSR_ERR_NOT_SUPPORTED: return "TSR_ERR_NOT_SUPPORTED";
    case TSR_ERR_NO_DEVICE: return "TSR_ERR_NO_DEVICE";
    case TSR_ERR_OUT_OF_MEMORY: return "TSR_ERR_OUT_OF_MEMORY";
    case TSR_ERR_DEVICE: return "TSR_ERR_DEVICE";
    case TSR_ERR_WRONG_CONTEXT: return "TSR_ERR_WRONG_CONTEXT";
    case TSR_ERR_IO: return "TSR_ERR_IO";
    case TSR_ERR_INTERNAL: return "TSR_ERR_INTERNAL";
    }
    return "TSR_ERR_UNKNOWN_STATUS";
}

const char *tsr_last_error(void) { return last_error; }

void tsr_clear_error(void) { last_error[0] = '\0'; }

tsr_status tsr_fail(tsr_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    tsr_log(TSR_LOG_INFO, "%s: %s", tsr_status_string(status), last_error);
    return status;
}

tsr_status tsr_why(char *why, size_t why_len, tsr_status status, const char *fmt, ...) {
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

void tsr_set_last_kernel(const char *name) { last_kernel = name ? name : ""; }

const char *tsr_last_kernel(void) { return last_kernel; }
