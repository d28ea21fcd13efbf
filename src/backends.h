/* Which runtime initialises a context for each backend. */
#ifndef TSR_BACKENDS_H
#define TSR_BACKENDS_H

#include "internal.h"

/* NULL for a value that is not a tsr_backend. */
tsr_backend_init_fn tsr_backend_init_for(tsr_backend backend);

#endif
