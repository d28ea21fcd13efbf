/* tessera_dlpack.h after a real <dlpack/dlpack.h> (Debian's libdlpack-dev
 * is v0.6, without DLPack 1.x's versioned tensor): the system's structs are
 * used, the 1.0 additions come from tessera_dlpack.h with v1.0's layout, and
 * a versioned tensor goes through the library. Built only where the header
 * is installed. */
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tessera_dlpack.h"

#ifdef TSR_DLPACK_DECLARED_HERE
#error "tessera_dlpack.h redeclared DLTensor although <dlpack/dlpack.h> came first"
#endif
_Static_assert(DLPACK_MAJOR_VERSION == 1, "DLPACK_MAJOR_VERSION");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "DLManagedTensorVersioned.flags");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "DLManagedTensorVersioned.dl_tensor");

int main(void) {
    float buf[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    DLManagedTensorVersioned m;
    memset(&m, 0, sizeof m);
    m.version.major = DLPACK_MAJOR_VERSION;
    m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    m.dl_tensor.data = buf;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 1;
    m.dl_tensor.dtype.code = kDLFloat;
    m.dl_tensor.dtype.bits = 32;
    m.dl_tensor.dtype.lanes = 1;
    m.dl_tensor.shape = shape;
    const DLTensor *t;
    tsr_tensor_desc d;
    if (tsr_dlpack_versioned_tensor(&m, 0, "x", &t) != TSR_OK || tsr_tensor_desc_from_dlpack(t, &d, NULL) != TSR_OK ||
        d.shape[0] != 4) {
        fprintf(stderr, "FAIL: %s\n", tsr_last_error());
        return 1;
    }
    if (tsr_dlpack_versioned_tensor(&m, 1, "y", &t) != TSR_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "FAIL: a read-only tensor was accepted as an output\n");
        return 1;
    }
    printf("DLPack header v%d + Tessera's 1.0 additions: OK\n", DLPACK_VERSION);
    return 0;
}
