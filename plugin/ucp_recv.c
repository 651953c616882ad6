/* UCP's tag receive calls, preloaded like the send calls (ucp_send.c): a
 * device receive posted opens a window of sends, so that the tiny device
 * sends that follow it before any progress (an exchange: osu_bibw, a halo)
 * go by rendezvous with the rest of the window (UCX_GDRPIPE_DEVICE_RNDV_BURST).
 * Each wrapper notes the buffer and goes on to libucp's function, found with
 * gdrpipe_preload_next at load; nothing else changes. */
#include "gdrpipe.h"


/* One wrapper per receive call: _name is UCP's function; RET, PARAMS and
 * ARGS spell the signature; _param the request parameters (or NULL). */
#define GDRPIPE_RECV_WRAP(_ret, _name, _params, _args, _param) \
    typedef _ret (*_name##_fn_t) _params; \
    static _name##_fn_t _name##_real; \
    \
    _ret _name _params \
    { \
        gdrpipe_send_note_recv(buffer, _param); \
        return _name##_real _args; \
    }

GDRPIPE_RECV_WRAP(ucs_status_ptr_t, ucp_tag_recv_nbx,
                  (ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                   ucp_tag_t tag_mask, const ucp_request_param_t *param),
                  (worker, buffer, count, tag, tag_mask, param), param)
GDRPIPE_RECV_WRAP(ucs_status_ptr_t, ucp_tag_recv_nb,
                  (ucp_worker_h worker, void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_t tag, ucp_tag_t tag_mask, ucp_tag_recv_callback_t cb),
                  (worker, buffer, count, datatype, tag, tag_mask, cb), NULL)
GDRPIPE_RECV_WRAP(ucs_status_t, ucp_tag_recv_nbr,
                  (ucp_worker_h worker, void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_t tag, ucp_tag_t tag_mask, void *req),
                  (worker, buffer, count, datatype, tag, tag_mask, req), NULL)
GDRPIPE_RECV_WRAP(ucs_status_ptr_t, ucp_tag_msg_recv_nb,
                  (ucp_worker_h worker, void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_message_h message, ucp_tag_recv_callback_t cb),
                  (worker, buffer, count, datatype, message, cb), NULL)
GDRPIPE_RECV_WRAP(ucs_status_ptr_t, ucp_tag_msg_recv_nbx,
                  (ucp_worker_h worker, void *buffer, size_t count, ucp_tag_message_h message,
                   const ucp_request_param_t *param),
                  (worker, buffer, count, message, param), param)

static void UCS_F_CTOR gdrpipe_recv_init(void)
{
    ucp_tag_recv_nbx_real     = (ucp_tag_recv_nbx_fn_t)gdrpipe_preload_next("ucp_tag_recv_nbx");
    ucp_tag_recv_nb_real      = (ucp_tag_recv_nb_fn_t)gdrpipe_preload_next("ucp_tag_recv_nb");
    ucp_tag_recv_nbr_real     = (ucp_tag_recv_nbr_fn_t)gdrpipe_preload_next("ucp_tag_recv_nbr");
    ucp_tag_msg_recv_nb_real  = (ucp_tag_msg_recv_nb_fn_t)gdrpipe_preload_next("ucp_tag_msg_recv_nb");
    ucp_tag_msg_recv_nbx_real = (ucp_tag_msg_recv_nbx_fn_t)
            gdrpipe_preload_next("ucp_tag_msg_recv_nbx");
}
