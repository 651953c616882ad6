/* The configure-time macros that UCX 1.13.1's internal headers depend on,
 * with the values of Debian's build (libucx0 1.13.1-1: --enable-mt,
 * --disable-logging, no stats). ENABLE_STATS must stay undefined: it changes
 * the layout of uct_base_iface_t and its constructor's signature. */
#ifndef GDRPIPE_UCX_CONFIG_H
#define GDRPIPE_UCX_CONFIG_H

#define ENABLE_ASSERT        1
#define ENABLE_DEBUG_DATA    0
#define ENABLE_PARAMS_CHECK  1
#define ENABLE_MT            1
#define HAVE_ALLOCA_H        1
#define HAVE_ATTRIBUTE_NOOPTIMIZE 1
#define HAVE_CPU_SET_T       1
#define IBV_HW_TM            1
#define NVALGRIND            1
#define UCS_MAX_LOG_LEVEL    UCS_LOG_LEVEL_DEBUG

#endif
