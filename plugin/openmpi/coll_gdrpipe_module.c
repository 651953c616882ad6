/* The module: takes every slot of the collective table that has buffers and
 * keeps the function that was there before it (the next module's). */
#include "coll_gdrpipe.h"
#include "coll_gdrpipe_funcs.h"
#include "coll_gdrpipe_params.h"
#include "coll_gdrpipe_slots.h"

#include "ompi/group/group.h"

#include <stdlib.h>
#include <string.h>

static void module_construct(mca_coll_gdrpipe_module_t *m)
{
    memset(&m->next, 0, sizeof(m->next));
    m->all_local = 0;
    m->red_gpu = m->red_staged = 0;
    memset(&m->red_auto, 0, sizeof(m->red_auto));
    m->red_failed = 0;
    m->mv_gpu = m->mv_other = 0;
    memset(&m->mv_auto, 0, sizeof(m->mv_auto));
    m->mv_failed = 0;
}

/* with UCX_GDRPIPE_STATS=y (as the plugin's counters) or verbose > 0 */
static void report(const mca_coll_gdrpipe_module_t *m)
{
    if (!gpo_coll_report_counters()) {
        return;
    }
    if (m->red_gpu + m->red_staged != 0) {
        opal_output(0, "coll gdrpipe: device reductions on the GPU: %lu, staged: %lu",
                    m->red_gpu, m->red_staged);
    }
    if (m->mv_gpu + m->mv_other != 0) {
        opal_output(0, "coll gdrpipe: device data moves on the GPU: %lu, otherwise: %lu",
                    m->mv_gpu, m->mv_other);
    }
}

static void release_next(mca_coll_gdrpipe_module_t *m)
{
#define GPO_SLOT(name)                                        \
    if (m->next.coll_##name##_module != NULL) {               \
        OBJ_RELEASE(m->next.coll_##name##_module);            \
        m->next.coll_##name##_module = NULL;                  \
    }
    GPO_SLOTS
#undef GPO_SLOT
}

static void module_destruct(mca_coll_gdrpipe_module_t *m)
{
    report(m);
    release_next(m);
}

OBJ_CLASS_INSTANCE(mca_coll_gdrpipe_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* Called after every lower-priority module has put its functions into the
 * communicator's table: those become ours to call. A slot nobody below
 * fills (scan on an intercommunicator) stays empty here too. Where the
 * framework leaves the installing to the modules (GPO_COLL_MODULE_INSTALLS,
 * Open MPI 6), ours go into the table here. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_gdrpipe_module_t *m = (mca_coll_gdrpipe_module_t *)module;
    mca_coll_base_comm_coll_t *below = comm->c_coll;
#define GPO_SLOT(name)                                                   \
    if (below->coll_##name != NULL && below->coll_##name##_module != NULL) { \
        m->next.coll_##name = below->coll_##name;                        \
        m->next.coll_##name##_module = below->coll_##name##_module;      \
        OBJ_RETAIN(m->next.coll_##name##_module);                        \
        if (GPO_COLL_MODULE_INSTALLS) {                                  \
            below->coll_##name = m->super.coll_##name;                   \
            below->coll_##name##_module = module;                        \
        }                                                                \
    } else {                                                             \
        m->super.coll_##name = NULL;                                     \
    }
    GPO_SLOTS
#undef GPO_SLOT
    m->all_local = !OMPI_COMM_IS_INTER(comm) && !ompi_group_have_remote_peers(comm->c_local_group);
    return OMPI_SUCCESS;
}

/* Open MPI 6: the slots still ours get back what was there before */
static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_gdrpipe_module_t *m = (mca_coll_gdrpipe_module_t *)module;
    if (GPO_COLL_MODULE_INSTALLS && comm != NULL && comm->c_coll != NULL) {
        mca_coll_base_comm_coll_t *table = comm->c_coll;
#define GPO_SLOT(name)                                                   \
        if (table->coll_##name##_module == module) {                     \
            table->coll_##name = m->next.coll_##name;                    \
            table->coll_##name##_module = m->next.coll_##name##_module;  \
        }
        GPO_SLOTS
#undef GPO_SLOT
    }
    release_next(m);
    return OMPI_SUCCESS;
}

/* each function has the type of its slot in this Open MPI's table (the
 * counts and displacements of coll_gdrpipe_abi.h) */
#define GPO_SLOT(name)                                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&mca_coll_gdrpipe_##name), \
                                                __typeof__(((mca_coll_base_module_t *)0)->coll_##name)), \
                   "mca_coll_gdrpipe_" #name " does not fit its slot");
GPO_SLOTS
#undef GPO_SLOT

void gpo_module_set_functions(mca_coll_base_module_t *m)
{
    m->coll_module_enable = module_enable;
    m->coll_module_disable = module_disable;
#define GPO_SLOT(name) m->coll_##name = mca_coll_gdrpipe_##name;
    GPO_SLOTS
#undef GPO_SLOT
}
