/* The definition a preloaded wrapper stands in front of (ucp_send.c,
 * ucp_recv.c, ucp_ep_err.c: libucp's; tcp_bound.c: libc's): the next one
 * after the plugin in the lookup order. Missing, the process cannot go on. */
#include "gdrpipe.h"

#include <dlfcn.h>

void *gdrpipe_preload_next(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL) {
        ucs_fatal("gdrpipe: %s not found after the plugin: %s", name, dlerror());
    }
    return fn;
}
