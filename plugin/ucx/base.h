/* What the plugin uses of UCX's internals that has one form in every
 * supported UCX version (1.13 to 1.23): UCT's base interface and endpoint
 * classes, the memory domain and transport entries, the registration calls,
 * UCM's event installers. Declared in the plugin's words from reading UCX's
 * sources; each version's file (v1_*.c) checks the sizes and offsets that
 * UCX's code relies on at compile time, and abi_check.c checks what UCX
 * wrote into a base interface at run time.
 *
 * UCX built with statistics (--enable-stats) adds a statistics node to the
 * base interface and endpoint and arguments to their constructors: such a
 * build is refused at load (abi_check.c), not supported. */
#ifndef GDRPIPE_UCX_BASE_H
#define GDRPIPE_UCX_BASE_H

#include <uct/api/uct.h>
#include <ucm/api/ucm.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/class.h>

/* ---- UCT: interfaces and endpoints --------------------------------------- */

/* a component (its layout differs per version: v1_*.h) */
typedef struct uct_component uct_component_t;

/* a device a transport offers on a memory domain */
typedef struct uct_tl_device_resource {
    char              name[UCT_DEVICE_NAME_MAX];
    uct_device_type_t type;
    ucs_sys_device_t  sys_device;
} uct_tl_device_resource_t;

/* the worker behind uct_worker_h; the plugin only passes it on */
typedef struct uct_priv_worker uct_priv_worker_t;

/* one entry of an interface's active-message table */
typedef struct uct_am_handler {
    uct_am_callback_t cb;
    void              *arg;
    uint32_t          flags;
} uct_am_handler_t;

/* the progress callback UCT registers on the worker for an interface */
typedef struct uct_worker_progress {
    uct_worker_cb_id_t id;
    uint32_t           refcount;
} uct_worker_progress_t;

/* the operations only UCT itself calls (their table differs per version:
 * abi.h gives the table an interface passes to its base) */
typedef struct uct_iface_internal_ops uct_iface_internal_ops_t;

/* The base of every interface: UCX's constructor (uct_base_iface_t_init)
 * fills it; UCT's code reads the active-message table, the error handler
 * and the progress state from it. */
typedef struct uct_base_iface {
    uct_iface_t              super;
    uct_iface_internal_ops_t *internal_ops;
    uct_md_h                 md;
    uct_priv_worker_t        *worker;
    uct_am_handler_t         am[UCT_AM_ID_MAX];
    uct_am_tracer_t          am_tracer;
    void                     *am_tracer_arg;
    uct_error_handler_t      err_handler;
    void                     *err_handler_arg;
    uint32_t                 err_handler_flags;
    uct_worker_progress_t    prog;
    unsigned                 progress_flags;
    struct {
        unsigned             num_alloc_methods;
        uct_alloc_method_t   alloc_methods[UCT_ALLOC_METHOD_LAST];
        ucs_log_level_t      failure_level;
        size_t               max_num_eps;
    } config;
} uct_base_iface_t;

UCS_CLASS_DECLARE(uct_base_iface_t, uct_iface_ops_t*, uct_iface_internal_ops_t*,
                  uct_md_h, uct_worker_h, const uct_iface_params_t*,
                  const uct_iface_config_t*);

/* the base of every endpoint */
typedef struct uct_base_ep {
    uct_ep_t super;
} uct_base_ep_t;

UCS_CLASS_DECLARE(uct_base_ep_t, uct_base_iface_t*);

/* what an endpoint to a process keeps to tell that process from a later
 * one with the same pid (ep_check) */
typedef struct uct_keepalive_info {
    unsigned long start_time;
} uct_keepalive_info_t;

ucs_status_t uct_ep_keepalive_init(uct_keepalive_info_t *ka, pid_t pid);
void uct_ep_keepalive_check(uct_ep_h ep, uct_keepalive_info_t *ka, pid_t pid,
                            unsigned flags, uct_completion_t *comp);

/* what the user configures for every interface (UCX's common table
 * uct_iface_config_table fills it) */
struct uct_iface_config {
    struct {
        uct_alloc_method_t *methods;
        unsigned           count;
    } alloc_methods;
    int                    failure;
    size_t                 max_num_eps;
};

/* a memory domain's common configuration: nothing (uct_md_config_table) */
struct uct_md_config {
    char unused;
};

/* the base of every memory domain */
struct uct_md {
    uct_md_ops_t    *ops;
    uct_component_t *component;
};

/* a transport of a component: its devices, its interfaces, its
 * configuration table (registered with uct_tl_register) */
typedef struct uct_tl {
    char                           name[UCT_TL_NAME_MAX];
    ucs_status_t                   (*query_devices)(uct_md_h md,
                                                    uct_tl_device_resource_t **devices_p,
                                                    unsigned *num_devices_p);
    ucs_status_t                   (*iface_open)(uct_md_h md, uct_worker_h worker,
                                                 const uct_iface_params_t *params,
                                                 const uct_iface_config_t *config,
                                                 uct_iface_h *iface_p);
    ucs_config_global_list_entry_t config;
    ucs_list_link_t                list;
} uct_tl_t;

extern ucs_config_field_t uct_iface_config_table[];
extern ucs_config_field_t uct_md_config_table[];

void uct_base_iface_query(uct_base_iface_t *iface, uct_iface_attr_t *iface_attr);
ucs_status_t uct_base_iface_fence(uct_iface_h iface, unsigned flags);
void uct_base_iface_progress_enable(uct_iface_h iface, unsigned flags);
void uct_base_iface_progress_disable(uct_iface_h iface, unsigned flags);
ucs_status_t uct_base_ep_fence(uct_ep_h ep, unsigned flags);
ucs_status_t uct_iface_handle_ep_err(uct_iface_h iface, uct_ep_h ep,
                                     ucs_status_t status);
void uct_tl_register(uct_component_t *component, uct_tl_t *tl);
void uct_tl_unregister(uct_tl_t *tl);
void uct_component_register(uct_component_t *component);
void uct_component_unregister(uct_component_t *component);

/* a deregistration's parameters (UCT_MD_MEM_DEREG_FIELD_* say which) */
typedef struct uct_md_mem_dereg_params {
    uint64_t         field_mask;   /* UCT_MD_MEM_DEREG_FIELD_* */
    unsigned         flags;
    uct_mem_h        memh;
    uct_completion_t *comp;
} uct_md_mem_dereg_params_t;

enum {
    UCT_MD_MEM_DEREG_FIELD_MEMH  = UCS_BIT(0),
    UCT_MD_MEM_DEREG_FIELD_FLAGS = UCS_BIT(1),
    UCT_MD_MEM_DEREG_FIELD_COMP  = UCS_BIT(2)
};

/* a remote key's packing parameters */
typedef struct uct_md_mkey_pack_params {
    uint64_t field_mask;
    unsigned flags;
} uct_md_mkey_pack_params_t;

/* the operations an interface's performance is asked for: the first nine,
 * the ones the plugin tells apart (the tag-matching, atomic and, from 1.23,
 * flush operations follow; their count differs between versions) */
typedef enum {
    UCT_EP_OP_AM_SHORT,
    UCT_EP_OP_AM_BCOPY,
    UCT_EP_OP_AM_ZCOPY,
    UCT_EP_OP_PUT_SHORT,
    UCT_EP_OP_PUT_BCOPY,
    UCT_EP_OP_PUT_ZCOPY,
    UCT_EP_OP_GET_SHORT,
    UCT_EP_OP_GET_BCOPY,
    UCT_EP_OP_GET_ZCOPY
} uct_ep_operation_t;

/* ---- UCS ------------------------------------------------------------------ */

uint64_t ucs_get_system_id(void);
uint64_t ucs_generate_uuid(uint64_t seed);

/* ---- UCM: memory events ---------------------------------------------------- */

/* a handler of memory events (UCX's memory-type cache is one) */
typedef struct ucm_event_handler {
    ucs_list_link_t      list;
    int                  events;
    int                  priority;
    ucm_event_callback_t cb;
    void                 *arg;
} ucm_event_handler_t;

/* A source of memory events (UCM's own: malloc/mmap hooks, and the CUDA
 * one that Debian's UCX lacks): installed when a handler asks for its
 * events, and asked for the allocations that exist already. */
typedef struct ucm_event_installer {
    ucs_status_t    (*install)(int events);
    void            (*get_existing_alloc)(ucm_event_handler_t *handler);
    ucs_list_link_t list;
} ucm_event_installer_t;

extern ucs_list_link_t ucm_event_installer_list;
void ucm_event_enter(void);
void ucm_event_leave(void);
void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event);

#endif
