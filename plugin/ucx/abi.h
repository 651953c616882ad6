/* The version-neutral face of what differs between UCX versions. The plugin
 * describes its component, memory domains and interfaces with the types
 * below; the ABI version's file (v1_*.c) builds UCX's own tables from them
 * and translates each call (UCX changed the arguments of several memory-
 * domain operations, the memory-domain attributes, the internal interface
 * operations and the performance estimate between 1.13 and 1.18). */
#ifndef GDRPIPE_UCX_ABI_H
#define GDRPIPE_UCX_ABI_H

#include "base.h"

#include <ucp/api/ucp.h>
#include <ucs/datastruct/linear_func.h>
#include <ucs/datastruct/mpool.h>

/* ---- versions ---------------------------------------------------------------- */

/* the UCX version the plugin was built for ("1.13"), and the versions its
 * ABI file serves (UCX's minor numbers, first and last) */
extern const char gdrpipe_ucx_abi_name[];
extern const unsigned gdrpipe_ucx_abi_minor_first, gdrpipe_ucx_abi_minor_last;

/* whether the md attributes say that an md which needs remote keys reaches
 * every memory type it registers (what protocol v2 of UCX 1.16+ wants for
 * zero-copy on device memory); where they do, UCP would also copy between
 * memory types in one process through such a transport */
extern const int gdrpipe_ucx_md_reaches_registered;

/* Whether the loaded UCX is one this build serves and is laid out as it
 * expects (the version, a build without statistics). Otherwise writes one
 * line naming both into why and returns 0. Nothing of UCX's internals may
 * be touched before it said yes. */
int gdrpipe_ucx_abi_usable(char *why, size_t max);

/* whether the loaded UCX was built with statistics (not supported) */
int gdrpipe_ucx_stats_build(void);

/* whether the loaded UCX has every function of it the ABI file calls (the
 * ones that came with later versions are weak) */
int gdrpipe_ucx_abi_complete(void);

/* ---- component ----------------------------------------------------------- */

typedef struct gdrpipe_ucx_component_desc {
    const char *name;
    ucs_status_t (*query_md_resources)(uct_component_t *component,
                                       uct_md_resource_desc_t **resources_p,
                                       unsigned *num_resources_p);
    ucs_status_t (*md_open)(uct_component_t *component, const char *md_name,
                            const uct_md_config_t *config, uct_md_h *md_p);
    /* a packed remote key into a local one (uct_rkey_t and a handle) */
    ucs_status_t (*rkey_unpack)(uct_component_t *component, const void *buffer,
                                uct_rkey_t *rkey_p, void **handle_p);
    ucs_status_t (*rkey_release)(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);
    /* unpacked keys point to this many bytes that say all of the key: two
     * keys are the same when those bytes are (UCX >= 1.16 compares keys) */
    size_t       rkey_size;
    /* the memory domain's configuration table */
    const char         *md_config_name;
    ucs_config_field_t *md_config_table;
    size_t             md_config_size;
} gdrpipe_ucx_component_desc_t;

/* A component in UCX's layout, made from desc (which must outlive it), with
 * the configuration prefix UCX_<prefix>. At most two components. */
uct_component_t *gdrpipe_ucx_component_create(const gdrpipe_ucx_component_desc_t *desc,
                                              const char *config_prefix);

/* ---- memory domains -------------------------------------------------------- */

/* what a memory domain reports of itself (the fields UCP reads) */
typedef struct gdrpipe_ucx_md_attr {
    uint64_t          flags;            /* UCT_MD_FLAG_* */
    uint64_t          reg_mem_types;    /* bits of ucs_memory_type_t */
    uint64_t          access_mem_types;
    uint64_t          detect_mem_types;
    size_t            max_reg;
    size_t            rkey_packed_size;
    ucs_linear_func_t reg_cost;
} gdrpipe_ucx_md_attr_t;

/* a memory domain's operations; NULL where it has none (unsupported) */
typedef struct gdrpipe_ucx_md_funcs {
    void         (*close)(uct_md_h md);
    void         (*query)(uct_md_h md, gdrpipe_ucx_md_attr_t *attr);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md, uct_mem_h memh);
    /* the remote key of a registration into buffer (rkey_packed_size) */
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh, void *buffer);
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *attr);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *type_p);
} gdrpipe_ucx_md_funcs_t;

#define GDRPIPE_UCX_TABLE_SLOTS 24

/* UCX's operation table of a kind of memory domain: md->ops points to it */
typedef struct gdrpipe_ucx_md_ops {
    void                         *table[GDRPIPE_UCX_TABLE_SLOTS];
    const gdrpipe_ucx_md_funcs_t *funcs;
} gdrpipe_ucx_md_ops_t;

/* fills ops for funcs (which must outlive it); returns the table to put
 * into uct_md_t.ops (calling it again with the same funcs changes nothing) */
uct_md_ops_t *gdrpipe_ucx_md_ops(gdrpipe_ucx_md_ops_t *ops,
                                 const gdrpipe_ucx_md_funcs_t *funcs);

/* ---- UCX's memory-type cache and UCM's memory-type events ------------------- */

/* tells UCX's memory-type cache the type of a range (its device unknown) */
void gdrpipe_ucx_memtype_cache_update(const void *address, size_t length,
                                      ucs_memory_type_t type);

/* a UCM memory-type event (allocation or free) of a range, every field UCX
 * reads of it set */
void gdrpipe_ucx_mem_type_event_init(ucm_event_t *event, void *address, size_t length,
                                     ucs_memory_type_t type);

/* ---- interfaces ------------------------------------------------------------ */

/* what a transport between hosts says of itself (UCX >= 1.18 uses only
 * transports with this flag between nodes; earlier ones have no flag) */
#ifdef UCT_IFACE_FLAG_INTER_NODE
#define GDRPIPE_UCX_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#define GDRPIPE_UCX_IFACE_FLAG_INTER_NODE 0
#endif

/* the operations performance estimates are asked for */
typedef enum {
    GDRPIPE_UCX_OP_OTHER,
    GDRPIPE_UCX_OP_PUT_SHORT,
    GDRPIPE_UCX_OP_GET_SHORT,
    GDRPIPE_UCX_OP_PUT_ZCOPY,
    GDRPIPE_UCX_OP_GET_ZCOPY
} gdrpipe_ucx_op_t;

/* an interface's performance for one operation, as UCP's selection reads
 * it (bandwidths in bytes/s, overheads and latency in seconds) */
typedef struct gdrpipe_ucx_perf {
    gdrpipe_ucx_op_t  op;               /* in */
    double            bw_dedicated;
    double            bw_shared;
    double            send_pre_overhead;
    double            send_post_overhead;
    double            recv_overhead;
    ucs_linear_func_t latency;
    size_t            max_inflight_eps;
} gdrpipe_ucx_perf_t;

typedef struct gdrpipe_ucx_iface_funcs {
    /* NULL: UCX's estimate from iface_query's figures */
    void (*estimate_perf)(uct_iface_h iface, gdrpipe_ucx_perf_t *perf);
} gdrpipe_ucx_iface_funcs_t;

/* UCX's internal operation table of a kind of interface */
typedef struct gdrpipe_ucx_iface_ops {
    void                            *table[GDRPIPE_UCX_TABLE_SLOTS];
    const gdrpipe_ucx_iface_funcs_t *funcs;
} gdrpipe_ucx_iface_ops_t;

/* fills ops for funcs and returns the table to hand to uct_base_iface_t's
 * constructor; the interface's public operations must include
 * iface_is_reachable and ep_create with the address it connects to */
uct_iface_internal_ops_t *gdrpipe_ucx_iface_ops(gdrpipe_ucx_iface_ops_t *ops,
                                                const gdrpipe_ucx_iface_funcs_t *funcs);

/* Checks what UCX's constructor wrote into a new base interface: the
 * internal-ops pointer, the memory domain, and every active-message slot
 * holding UCX's default handler. 0 and one line in why on a mismatch. */
int gdrpipe_ucx_base_iface_check(const uct_base_iface_t *iface,
                                 const uct_iface_internal_ops_t *internal_ops,
                                 uct_md_h md, char *why, size_t max);

/* ---- memory pools ---------------------------------------------------------- */

/* a pool of elem_size-byte elements, grown by grow at a time, unbounded */
ucs_status_t gdrpipe_ucx_mpool_init(ucs_mpool_t *mp, size_t elem_size, unsigned grow,
                                    const char *name);

/* ---- UCP: the rendezvous threshold of one send ------------------------------ */

typedef struct gdrpipe_ucx_rndv_saved {
    void   *worker;
    void   *config;
    size_t rma[2], am[2];
    int    locked;
} gdrpipe_ucx_rndv_saved_t;

/* For a protocol-v1 tag send on ep whose rendezvous lane's memory domain
 * belongs to one of the given components: sets the endpoint
 * configuration's remote rendezvous thresholds to thresh, under the
 * worker's lock, and returns 1 (then gdrpipe_ucx_rndv_end after the send).
 * 0 where it does not apply or this UCX's layout is not known for it. */
int gdrpipe_ucx_rndv_begin(ucp_ep_h ep, size_t thresh,
                           const uct_component_t *const *components, unsigned count,
                           gdrpipe_ucx_rndv_saved_t *saved);
void gdrpipe_ucx_rndv_end(gdrpipe_ucx_rndv_saved_t *saved);

#endif
