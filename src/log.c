/* Opt-in logging to stderr: TESSERA_LOG=error|warn|info|debug. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "internal.h"

static tsr_log_level level = TSR_LOG_OFF;
static once_flag level_once = ONCE_FLAG_INIT;

static void read_level(void) {
    const char *s = getenv("TESSERA_LOG");
    if (!s || !*s) return;
    static const char *names[] = {"off", "error", "warn", "info", "debug"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) level = (tsr_log_level)i;
    if (strcmp(s, "1") == 0) level = TSR_LOG_INFO;
}

tsr_log_level tsr_log_level_get(void) {
    call_once(&level_once, read_level);
    return level;
}

void tsr_log(tsr_log_level lvl, const char *fmt, ...) {
    if (lvl == TSR_LOG_OFF || lvl > tsr_log_level_get()) return;
    static const char *tags[] = {"", "error", "warn", "info", "debug"};
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tessera[%s]: %s\n", tags[lvl], buf);
}
