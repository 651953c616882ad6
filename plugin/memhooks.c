/* Feeds UCX with CUDA memory events: gdrpipe's interception of the driver's
 * allocation and free entry points plays the role of UCX's missing
 * libucm_cuda. One event feeds UCX's memory-type cache and every
 * registration cache that listens for MEM_TYPE_FREE. */
#include "gdrpipe.h"

#include <ucm/api/ucm.h>
#include <ucs/config/global_opts.h>

static ucs_memory_type_t gdrpipe_memhooks_type(int kind)
{
    switch (kind) {
    case GP_HOOK_MANAGED:
        return UCS_MEMORY_TYPE_CUDA_MANAGED;
    case GP_HOOK_HOST_PINNED:
        return UCS_MEMORY_TYPE_HOST;
    default:
        return UCS_MEMORY_TYPE_CUDA;
    }
}

/* changes at every allocation or free the hooks see (starts at 1: 0 is
 * never current), so that what was learnt of an address can be kept until
 * then (plugin/ucp_send.c) */
uint64_t gdrpipe_memhooks_generation = 1;

static void gdrpipe_memhooks_event(void *arg, int is_free, uint64_t address,
                                   size_t length, int kind)
{
    ucm_event_t event;

    __atomic_fetch_add(&gdrpipe_memhooks_generation, 1, __ATOMIC_RELEASE);

    if ((kind == GP_HOOK_HOST_PINNED) && !is_free) {
        return;   /* host memory: UCX treats it as host anyway */
    }
    gdrpipe_ucx_mem_type_event_init(&event, (void*)address, (length > 0) ? length : 1,
                                    gdrpipe_memhooks_type(kind));
    ucm_event_enter();
    ucm_event_dispatch(is_free ? UCM_EVENT_MEM_TYPE_FREE : UCM_EVENT_MEM_TYPE_ALLOC,
                       &event);
    ucm_event_leave();
}

static ucs_status_t gdrpipe_memhooks_ucm_install(int events)
{
    return UCS_OK;   /* installed at load time, see gdrpipe_memhooks_init() */
}

typedef struct {
    ucm_event_handler_t *handler;
} gdrpipe_existing_ctx_t;

static void gdrpipe_memhooks_existing_cb(void *arg, int is_free, uint64_t address,
                                         size_t length, int kind)
{
    ucm_event_handler_t *handler = ((gdrpipe_existing_ctx_t*)arg)->handler;
    ucm_event_t event;

    if (kind == GP_HOOK_HOST_PINNED) {
        return;
    }
    gdrpipe_ucx_mem_type_event_init(&event, (void*)address, length,
                                    gdrpipe_memhooks_type(kind));
    handler->cb(UCM_EVENT_MEM_TYPE_ALLOC, &event, handler->arg);
}

static void gdrpipe_memhooks_get_existing_alloc(ucm_event_handler_t *handler)
{
    gdrpipe_existing_ctx_t ctx = {handler};

    if (handler->events & UCM_EVENT_MEM_TYPE_ALLOC) {
        gp_hooks_for_each_allocation(gdrpipe_memhooks_existing_cb, &ctx);
    }
}

static ucm_event_installer_t gdrpipe_memhooks_installer = {
    .install            = gdrpipe_memhooks_ucm_install,
    .get_existing_alloc = gdrpipe_memhooks_get_existing_alloc
};

void gdrpipe_memhooks_init(void)
{
    char why[512];
    int ret;

    ret = gp_hooks_install(why, sizeof(why));
    if (ret == 0) {
        ucs_debug("gdrpipe: no CUDA driver, no memory hooks: %s", why);
        return;
    }
    gp_hooks_set_listener(gdrpipe_memhooks_event, NULL);
    ucs_list_add_tail(&ucm_event_installer_list, &gdrpipe_memhooks_installer.list);
    if (ret < 0) {
        /* Without complete hooks UCX's memory-type cache could hold stale
         * or missing entries; per-request detection stays correct. */
        ucs_warn("gdrpipe: CUDA memory hooks incomplete, disabling UCX's "
                 "memory-type cache (detection per request): %s", why);
        ucs_global_opts.enable_memtype_cache = UCS_NO;
    } else {
        ucs_debug("gdrpipe: CUDA allocation/free hooks installed");
    }
}
