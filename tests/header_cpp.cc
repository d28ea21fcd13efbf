// tessera.h compiles alone as C++ with extern "C" linkage.
#include "tessera.h"

int main() { return tsr_version() == TSR_VERSION ? 0 : 1; }
