/* The pthreads threads component's yield hook, exported by libopen-pal. */
#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_H

#include "opal/mca/threads/thread.h"

typedef void(opal_threads_pthreads_yield_fn_t)(void);
OPAL_DECLSPEC int opal_threads_pthreads_yield_init(const mca_base_component_t *component);
OPAL_DECLSPEC extern opal_threads_pthreads_yield_fn_t *opal_threads_pthreads_yield_fn;

#endif
