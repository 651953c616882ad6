/* The shape every function of the module shares: stage the device buffers
 * (a gpo_prep_* call), call the next module's function with the host
 * copies, copy the outputs back (at once, or when the request completes).
 * Host buffers go straight to the next module. */
#ifndef GDRPIPE_COLL_GDRPIPE_WRAP_H
#define GDRPIPE_COLL_GDRPIPE_WRAP_H

#include "coll_gdrpipe_prep.h"

#define GPO_M ((mca_coll_gdrpipe_module_t *)module)
#define GPO_NEXT(fn, ...) GPO_M->next.coll_##fn(__VA_ARGS__, GPO_M->next.coll_##fn##_module)
#define GPO_INEXT(fn, ...) \
    GPO_M->next.coll_##fn(__VA_ARGS__, request, GPO_M->next.coll_##fn##_module)

/* blocking: PREP stages, the rest are the next function's arguments */
#define GPO_BLOCKING(fn, PREP, ...)                              \
    do {                                                         \
        gpo_stage_t st_ = GPO_STAGE_INIT;                        \
        int prc_ = PREP;                                         \
        if (prc_ == 0) return GPO_NEXT(fn, __VA_ARGS__);         \
        if (prc_ < 0) return prc_;                               \
        return gpo_end_blocking(&st_, GPO_NEXT(fn, __VA_ARGS__)); \
    } while (0)

/* nonblocking: as above, the request completes after the copies back */
#define GPO_NONBLOCKING(fn, PREP, ...)                                      \
    do {                                                                    \
        gpo_stage_t st_ = GPO_STAGE_INIT;                                   \
        gpo_prep_in_request = 1;                                            \
        int prc_ = PREP;                                                    \
        gpo_prep_in_request = 0;                                            \
        if (prc_ == 0) return GPO_INEXT(fn, __VA_ARGS__);                   \
        if (prc_ < 0) return prc_;                                          \
        return gpo_end_request(&st_, GPO_INEXT(fn, __VA_ARGS__), request);  \
    } while (0)

/* persistent (MPIX_*_init): the staged buffers stay with the request, each
 * MPI_Start copies the inputs in, each completion the outputs back */
#define GPO_PERSISTENT(fn, PREP, ...)                                        \
    do {                                                                     \
        gpo_stage_t st_ = GPO_STAGE_INIT;                                    \
        gpo_prep_in_request = 1;                                             \
        int prc_ = PREP;                                                     \
        gpo_prep_in_request = 0;                                             \
        if (prc_ < 0) return prc_;                                           \
        int rc_ = GPO_M->next.coll_##fn(__VA_ARGS__, info, request,          \
                                        GPO_M->next.coll_##fn##_module);     \
        return prc_ ? gpo_end_persistent(&st_, rc_, request) : rc_;          \
    } while (0)

/* nonblocking and persistent forms of the data-moving collectives: first
 * the device moves' request (coll_gdrpipe_idevmove.c), when CALL, one of
 * coll_gdrpipe_devmove.h's functions given &how_ and &rc_, takes the call */
#define GPO_DEVMOVE_FIRST(persistent, CALL)                          \
    do {                                                             \
        const gpo_mv_how_t how_ = {request, (persistent)};           \
        int rc_ = OMPI_SUCCESS;                                      \
        if ((CALL) == 0) return rc_;                                 \
    } while (0)

#define ST (&st_)

#endif
