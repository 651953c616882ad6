/* Run-time checks that the loaded UCX is laid out as the plugin declares it
 * (version-neutral: the per-version facts are in v1_*.c). */
#include "ucx.h"

#include <dlfcn.h>
#include <stdio.h>

/* UCX built with statistics exports its statistics-node allocator; its base
 * interface and endpoint are then larger than base.h says */
int gdrpipe_ucx_stats_build(void)
{
    return dlsym(RTLD_DEFAULT, "ucs_stats_node_alloc") != NULL;
}

int gdrpipe_ucx_base_iface_check(const uct_base_iface_t *iface,
                                 const uct_iface_internal_ops_t *internal_ops,
                                 uct_md_h md, char *why, size_t max)
{
    uct_am_callback_t stub = iface->am[0].cb;
    unsigned id;

    if (iface->internal_ops != internal_ops) {
        snprintf(why, max, "the base interface's internal operations are at another "
                 "place than declared");
        return 0;
    }
    if (iface->md != md) {
        snprintf(why, max, "the base interface's memory domain is at another place "
                 "than declared");
        return 0;
    }
    /* UCX's constructor gives every active-message id one default handler,
     * whose argument is the id */
    for (id = 0; id < UCT_AM_ID_MAX; ++id) {
        if ((stub == NULL) || (iface->am[id].cb != stub) ||
            (iface->am[id].arg != (void*)(uintptr_t)id)) {
            snprintf(why, max, "the base interface's active-message table is not "
                     "where it is declared (id %u)", id);
            return 0;
        }
    }
    return 1;
}
