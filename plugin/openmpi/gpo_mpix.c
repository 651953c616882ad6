/* The component tells the preloaded interposer (if any) that device buffers
 * are handled. */
#include "gpo_mpix.h"

#include <dlfcn.h>
#include <stddef.h>

void gpo_mpix_set_supported(int yes)
{
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, GPO_MPIX_SET_SYMBOL);
    if (set != NULL) {
        set(yes);
    }
}
