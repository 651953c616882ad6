/* UCX 1.19 to 1.23 (see v1_19.h for the layouts; the adapters are
 * common.c's). Built for one minor version (GDRPIPE_UCX_MINOR), since
 * several layouts differ between them. */
#include "v1_19.h"

#include <ucs/sys/preprocessor.h>
#include <stddef.h>

const char gdrpipe_ucx_abi_name[]          = "1." UCS_PP_MAKE_STRING(GDRPIPE_UCX_MINOR);
const unsigned gdrpipe_ucx_abi_minor_first = GDRPIPE_UCX_MINOR;
const unsigned gdrpipe_ucx_abi_minor_last  = GDRPIPE_UCX_MINOR;
const int gdrpipe_ucx_md_reaches_registered = 1;

#define GDRPIPE_UCX_AT_LEAST(_minor, _then, _else) \
    ((GDRPIPE_UCX_MINOR >= (_minor)) ? (_then) : (_else))

/* the layouts UCX's code relies on (x86-64, no statistics), read from
 * UCX 1.19.1, 1.20.1, 1.21.0 and 1.22.0; for 1.23 checked against Debian's
 * 1.23.0~rc1 libraries (see the block for 1.23 below) */
_Static_assert(sizeof(uct_tl_t) == 104, "uct_tl_t");

/* component */
_Static_assert(sizeof(uct_component_t) == 232, "uct_component_t");
_Static_assert(offsetof(uct_component_t, rkey_unpack) == 40, "rkey_unpack");
_Static_assert(offsetof(uct_component_t, rkey_release) == 56, "rkey_release");
_Static_assert(offsetof(uct_component_t, rkey_compare) == 64, "rkey_compare");
_Static_assert(offsetof(uct_component_t, md_config) == 72, "md_config");
_Static_assert(offsetof(uct_component_t, tl_list) == 184, "tl_list");
_Static_assert(offsetof(uct_component_t, md_vfs_init) == 224, "md_vfs_init");
_Static_assert(sizeof(uct_rkey_unpack_params_t) == 16, "rkey unpack params");

/* memory domains */
_Static_assert(sizeof(uct_md_ops_t) ==
               GDRPIPE_UCX_AT_LEAST(23, 104, GDRPIPE_UCX_AT_LEAST(21, 96, 88)),
               "uct_md_ops_t");
_Static_assert(offsetof(uct_md_ops_t, mem_reg) == 40, "md ops mem_reg");
_Static_assert(offsetof(uct_md_ops_t, mem_query) == 56, "md ops mem_query");
_Static_assert(offsetof(uct_md_ops_t, mkey_pack) == 64, "md ops mkey_pack");
_Static_assert(offsetof(uct_md_ops_t, detect_memory_type) == 80, "md ops detect");
#if GDRPIPE_UCX_MINOR >= 21
_Static_assert(offsetof(uct_md_ops_t, mem_elem_pack) == 88, "md ops mem_elem_pack");
#endif
_Static_assert(sizeof(uct_md_attr_v2_t) == GDRPIPE_UCX_AT_LEAST(22, 544, 536),
               "uct_md_attr_v2_t");
_Static_assert(offsetof(uct_md_attr_v2_t, cache_mem_types) == 48, "md attr cache types");
_Static_assert(offsetof(uct_md_attr_v2_t, detect_mem_types) == 64, "md attr detect types");
_Static_assert(offsetof(uct_md_attr_v2_t, access_mem_types) == 80, "md attr access types");
_Static_assert(offsetof(uct_md_attr_v2_t, reg_cost) == 96, "md attr reg_cost");
_Static_assert(offsetof(uct_md_attr_v2_t, rkey_packed_size) == 128, "md attr rkey size");
_Static_assert(offsetof(uct_md_attr_v2_t, local_cpus) == 136, "md attr local_cpus");
_Static_assert(offsetof(uct_md_attr_v2_t, reg_alignment) == 528, "md attr reg_alignment");
#if GDRPIPE_UCX_MINOR >= 22
_Static_assert(offsetof(uct_md_attr_v2_t, required_mem_flags) == 536,
               "md attr required_mem_flags");
_Static_assert(sizeof(uct_md_mem_attr_v2_t) == 56, "uct_md_mem_attr_v2_t");
_Static_assert(offsetof(uct_md_mem_attr_v2_t, mem_flags) == 48, "mem attr mem_flags");
_Static_assert(offsetof(ucm_event_t, mem_type.sys_dev) == 20, "mem-type event sys_dev");
_Static_assert(offsetof(ucm_event_t, mem_type.mem_flags) == 21, "mem-type event flags");
#endif
_Static_assert(sizeof(uct_md_mem_reg_params_t) == 32, "reg params");
_Static_assert(sizeof(uct_md_mkey_pack_params_t) == 16, "mkey pack params");

/* interfaces */
_Static_assert(sizeof(uct_iface_internal_ops_t) ==
               ((GDRPIPE_UCX_MINOR == 19) ? 56 : (GDRPIPE_UCX_MINOR == 21) ? 64 :
                (GDRPIPE_UCX_MINOR >= 23) ? 96 : 80),
               "uct_iface_internal_ops_t");
_Static_assert(offsetof(uct_iface_internal_ops_t, iface_estimate_perf) ==
               (((GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)) ? 8 : 0),
               "iface_estimate_perf");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_invalidate) ==
               ((GDRPIPE_UCX_MINOR == 20) ? 40 : (GDRPIPE_UCX_MINOR >= 22) ? 32 : 24),
               "ep_invalidate");
_Static_assert(offsetof(uct_iface_internal_ops_t, iface_is_reachable_v2) ==
               ((GDRPIPE_UCX_MINOR == 20) ? 56 : (GDRPIPE_UCX_MINOR >= 22) ? 48 : 40),
               "iface_is_reachable_v2");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_is_connected) ==
               ((GDRPIPE_UCX_MINOR == 20) ? 64 : (GDRPIPE_UCX_MINOR >= 22) ? 56 : 48),
               "ep_is_connected");
#if GDRPIPE_UCX_MINOR >= 20
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_get_device_ep) ==
               ((GDRPIPE_UCX_MINOR == 20) ? 72 : (GDRPIPE_UCX_MINOR == 21) ? 56 : 64),
               "ep_get_device_ep");
#endif
#if GDRPIPE_UCX_MINOR == 20
_Static_assert(offsetof(uct_iface_internal_ops_t, iface_mem_element_pack) == 24,
               "iface_mem_element_pack");
#endif
#if (GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)
_Static_assert(offsetof(uct_iface_internal_ops_t, iface_query_v2) == 0, "iface_query_v2");
#endif
#if GDRPIPE_UCX_MINOR >= 22
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_put_sgl_zcopy) == 72,
               "ep_put_sgl_zcopy");
#endif
_Static_assert(sizeof(uct_perf_attr_t) == 112, "uct_perf_attr_t");
_Static_assert(offsetof(uct_perf_attr_t, bandwidth) == 48, "perf bandwidth");
_Static_assert(offsetof(uct_perf_attr_t, path_bandwidth) == 64, "perf path_bandwidth");
_Static_assert(offsetof(uct_perf_attr_t, latency) == 80, "perf latency");
_Static_assert(offsetof(uct_perf_attr_t, max_inflight_eps) == 96, "perf max_inflight");
_Static_assert(offsetof(uct_perf_attr_t, flags) == 104, "perf flags");
_Static_assert(sizeof(uct_iface_is_reachable_params_t) == 64, "is_reachable params");
_Static_assert(offsetof(uct_iface_is_reachable_params_t, scope) == 40,
               "is_reachable params scope");

#if GDRPIPE_UCX_MINOR >= 23
/* 1.23, as Debian's 1.23.0~rc1 libuct has it: its md operation tables (the
 * self and tcp transports') are 104 bytes and fill mem_elem_release last; its
 * internal operation tables are 96 bytes, uct_stub_internal_ops fills all
 * twelve slots, and uct_base_iface_t_init checks slot 11 (ep_outstanding_purge)
 * besides estimate_perf, vfs_refresh, ep_query and ep_invalidate (slots 1-4).
 * The component (232 bytes, rkey_compare at 64, md_vfs_init at 224), the
 * base interface (1280 bytes, internal_ops at 400, am at 424), the md
 * attributes (reg_alignment at 528, required_mem_flags at 536) and the
 * performance estimate (flags at 104) are as in 1.22. */
_Static_assert(offsetof(uct_md_ops_t, mem_elem_pack) == 88, "1.23 md ops mem_elem_pack");
_Static_assert(offsetof(uct_md_ops_t, mem_elem_release) == 96,
               "1.23 md ops mem_elem_release");
_Static_assert(offsetof(uct_iface_internal_ops_t, iface_estimate_perf) == 8,
               "1.23 iface_estimate_perf");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_invalidate) == 32,
               "1.23 ep_invalidate");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_put_sgl_zcopy) == 72,
               "1.23 ep_put_sgl_zcopy");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_get_sgl_zcopy) == 80,
               "1.23 ep_get_sgl_zcopy");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_outstanding_purge) == 88,
               "1.23 ep_outstanding_purge");
#endif


/* ---- versions ----------------------------------------------------------------- */

int gdrpipe_ucx_abi_complete(void)
{
    return (uct_base_ep_is_connected != NULL) && (uct_iface_scope_is_reachable != NULL) &&
#if (GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)
           (uct_iface_base_query_v2 != NULL) &&
#endif
           (ucs_mpool_params_reset != NULL);
}
