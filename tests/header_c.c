/* tessera.h compiles alone as strict C11. */
#include "tessera.h"

int main(void) { return tsr_version() == TSR_VERSION ? 0 : 1; }
