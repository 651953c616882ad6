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

int gdrpipe_ucx_abi_usable(char *why, size_t max)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    if ((major != 1) || (minor < gdrpipe_ucx_abi_minor_first) ||
        (minor > gdrpipe_ucx_abi_minor_last)) {
        snprintf(why, max, "gdrpipe was built for UCX %s but the loaded UCX is "
                 "%u.%u.%u: not registering (build gdrpipe for the installed UCX)",
                 gdrpipe_ucx_abi_name, major, minor, release);
        return 0;
    }
    if (!gdrpipe_ucx_abi_complete()) {
        snprintf(why, max, "the loaded UCX %u.%u.%u lacks functions of UCX %s: not "
                 "registering", major, minor, release, gdrpipe_ucx_abi_name);
        return 0;
    }
    if (gdrpipe_ucx_stats_build()) {
        snprintf(why, max, "the loaded UCX %u.%u.%u was built with statistics, which "
                 "changes the layouts gdrpipe uses: not registering", major, minor,
                 release);
        return 0;
    }
    return 1;
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
