#include "internal.h"

#define TSR_STR2(x) #x
#define TSR_STR(x) TSR_STR2(x)

unsigned tsr_version(void) { return TSR_VERSION; }

const char *tsr_version_string(void) {
    return TSR_STR(TSR_VERSION_MAJOR) "." TSR_STR(TSR_VERSION_MINOR) "." TSR_STR(TSR_VERSION_PATCH);
}
