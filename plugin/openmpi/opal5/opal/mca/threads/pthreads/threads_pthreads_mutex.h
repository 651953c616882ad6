/* The pthreads component's mutex and condition variable: the POSIX types
 * themselves (their size is part of opal_mutex_t, hence of every structure
 * that holds one), with inline wrappers as a release build has them. */
#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_MUTEX_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_MUTEX_H

#include "opal_config.h"

#include <pthread.h>
#include <stdbool.h>

#include "opal/class/opal_object.h"
#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_mutex_t opal_thread_internal_mutex_t;
#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *m, bool recursive)
{
    int rc;
    if (!recursive) {
        rc = pthread_mutex_init(m, NULL);
    } else {
        pthread_mutexattr_t attr;
        if (pthread_mutexattr_init(&attr) != 0) {
            return OPAL_ERR_IN_ERRNO;
        }
        (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        rc = pthread_mutex_init(m, &attr);
        (void)pthread_mutexattr_destroy(&attr);
    }
    return rc == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *m)
{
    (void)pthread_mutex_lock(m);
}

/* 0 when taken, 1 when busy */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *m)
{
    return pthread_mutex_trylock(m) == 0 ? 0 : 1;
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *m)
{
    (void)pthread_mutex_unlock(m);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *m)
{
    (void)pthread_mutex_destroy(m);
}

typedef pthread_cond_t opal_thread_internal_cond_t;
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *c)
{
    return pthread_cond_init(c, NULL) == 0 ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *c,
                                                  opal_thread_internal_mutex_t *m)
{
    (void)pthread_cond_wait(c, m);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *c)
{
    (void)pthread_cond_broadcast(c);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *c)
{
    (void)pthread_cond_signal(c);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *c)
{
    (void)pthread_cond_destroy(c);
}

END_C_DECLS

#endif
