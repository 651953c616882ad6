/* Routes the core's log lines to UCX's logger, so UCX_LOG_LEVEL governs them. */
#include "gdrpipe.h"


static void gdrpipe_log_sink(int level, const char *file, int line, const char *msg)
{
    static const ucs_log_level_t map[] = {
        UCS_LOG_LEVEL_ERROR, UCS_LOG_LEVEL_WARN, UCS_LOG_LEVEL_INFO,
        UCS_LOG_LEVEL_DEBUG, UCS_LOG_LEVEL_TRACE
    };
    ucs_log_level_t l = map[(level < 0) ? 0 : ((level > 4) ? 4 : level)];

    if (ucs_log_is_enabled(l)) {
        ucs_log_dispatch(file, line, "gdrpipe", l, &ucs_global_opts.log_component,
                         "%s", msg);
    }
}

void gdrpipe_log_init(void)
{
    /* the core formats a message only when UCX would show it */
    ucs_log_level_t l = ucs_global_opts.log_component.log_level;
    int max = (l >= UCS_LOG_LEVEL_TRACE) ? 4 :
              (l >= UCS_LOG_LEVEL_DEBUG) ? 3 :
              (l >= UCS_LOG_LEVEL_INFO)  ? 2 :
              (l >= UCS_LOG_LEVEL_WARN)  ? 1 : 0;

    gp_set_log_sink(gdrpipe_log_sink, max);
}
