/* UCX 1.16 to 1.18 (see v1_16.h for the layouts; the adapters are common.c's).
 * Built for one minor version (GDRPIPE_UCX_MINOR), since two layouts differ
 * between them. */
#include "v1_16.h"

#include <ucs/sys/preprocessor.h>
#include <stddef.h>

const char gdrpipe_ucx_abi_name[]          = "1." UCS_PP_MAKE_STRING(GDRPIPE_UCX_MINOR);
const unsigned gdrpipe_ucx_abi_minor_first = GDRPIPE_UCX_MINOR;
const unsigned gdrpipe_ucx_abi_minor_last  = GDRPIPE_UCX_MINOR;
const int gdrpipe_ucx_md_reaches_registered = 1;

/* the layouts UCX's code relies on (x86-64, no statistics), read from
 * UCX 1.16.0, 1.17.0 and 1.18.1 */
_Static_assert(sizeof(uct_tl_t) == 104, "uct_tl_t");
_Static_assert(sizeof(uct_component_t) == 232, "uct_component_t");
_Static_assert(offsetof(uct_component_t, rkey_compare) == 64, "rkey_compare");
_Static_assert(offsetof(uct_component_t, md_config) == 72, "md_config");
_Static_assert(sizeof(uct_md_ops_t) == 88, "uct_md_ops_t");
_Static_assert(sizeof(uct_iface_internal_ops_t) == 56, "uct_iface_internal_ops_t");
_Static_assert(offsetof(uct_perf_attr_t, bandwidth) == 48, "perf bandwidth");
_Static_assert(sizeof(uct_perf_attr_t) == ((GDRPIPE_UCX_MINOR >= 17) ? 96 : 88),
               "uct_perf_attr_t");
_Static_assert(offsetof(uct_md_attr_v2_t, reg_cost) ==
               ((GDRPIPE_UCX_MINOR >= 18) ? 96 : 88), "md attr reg_cost");

/* ---- versions ----------------------------------------------------------------- */

int gdrpipe_ucx_abi_complete(void)
{
    return (uct_base_ep_is_connected != NULL) && (uct_iface_scope_is_reachable != NULL) &&
           (ucs_mpool_params_reset != NULL);
}
