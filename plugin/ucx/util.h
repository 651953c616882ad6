/* The plugin's own versions of helpers that UCX keeps in internal headers
 * (inline functions and macros, so nothing of them is in UCX's libraries):
 * allocation, the singly-linked queue over ucs_queue_head_t (a public
 * type), iovec lengths and copies, parameter checks, and the delivery of an
 * active message to an interface's handler table. */
#ifndef GDRPIPE_UCX_UTIL_H
#define GDRPIPE_UCX_UTIL_H

#include "base.h"

#include <ucs/datastruct/queue_types.h>
#include <ucs/debug/log_def.h>
#include <ucs/sys/compiler_def.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation (the name is for UCX's memory tracking, which the plugin
 *      does not take part in) ------------------------------------------------ */
#define ucs_malloc(_size, _name)        malloc(_size)
#define ucs_calloc(_n, _size, _name)    calloc(_n, _size)
#define ucs_free(_ptr)                  free(_ptr)
#define ucs_strdup(_s, _name)           strdup(_s)

/* an error that cannot be recovered from: logged, then the process aborts */
#define ucs_fatal(_fmt, ...) \
    do { \
        ucs_error(_fmt, ## __VA_ARGS__); \
        abort(); \
    } while (0)

/* ---- queues ---------------------------------------------------------------- */
static inline void ucs_queue_head_init(ucs_queue_head_t *queue)
{
    queue->head  = NULL;
    queue->ptail = &queue->head;
}

static inline int ucs_queue_is_empty(const ucs_queue_head_t *queue)
{
    return queue->ptail == &queue->head;
}

static inline void ucs_queue_push(ucs_queue_head_t *queue, ucs_queue_elem_t *elem)
{
    elem->next    = NULL;
    *queue->ptail = elem;
    queue->ptail  = &elem->next;
}

static inline ucs_queue_elem_t *ucs_queue_pull_non_empty(ucs_queue_head_t *queue)
{
    ucs_queue_elem_t *elem = queue->head;

    queue->head = elem->next;
    if (queue->head == NULL) {
        queue->ptail = &queue->head;
    }
    return elem;
}

#define ucs_queue_head_elem_non_empty(_queue, _type, _member) \
    ucs_container_of((_queue)->head, _type, _member)
#define ucs_queue_pull_elem_non_empty(_queue, _type, _member) \
    ucs_container_of(ucs_queue_pull_non_empty(_queue), _type, _member)

static inline void ucs_queue_push_head(ucs_queue_head_t *queue, ucs_queue_elem_t *elem)
{
    elem->next  = queue->head;
    queue->head = elem;
    if (queue->ptail == &queue->head) {
        queue->ptail = &elem->next;
    }
}

/* ---- pending requests kept in a queue (their private area holds the link) -- */
typedef struct {
    ucs_queue_elem_t queue_elem;
} uct_pending_req_priv_queue_t;

#define uct_pending_req_queue_push(_queue, _req) \
    ucs_queue_push((_queue), &((uct_pending_req_priv_queue_t*)(_req)->priv)->queue_elem)

/* Runs the queue's requests in order while _cond holds (_cond may use
 * _priv, the request's private area); a request that returns other than
 * UCS_OK goes back to the head, and an error stops the dispatch. */
#define uct_pending_queue_dispatch(_priv, _queue, _cond) \
    while (!ucs_queue_is_empty(_queue)) { \
        uct_pending_req_priv_queue_t *_gp_p; \
        uct_pending_req_t *_gp_req; \
        ucs_status_t _gp_status; \
        \
        _gp_p  = ucs_queue_head_elem_non_empty((_queue), \
                                               uct_pending_req_priv_queue_t, \
                                               queue_elem); \
        _priv  = (__typeof__(_priv))_gp_p; \
        if (!(_cond)) { \
            break; \
        } \
        _gp_req = ucs_container_of((void*)_gp_p, uct_pending_req_t, priv); \
        ucs_queue_pull_non_empty(_queue); \
        _gp_status = _gp_req->func(_gp_req); \
        if (_gp_status == UCS_OK) { \
            continue; \
        } \
        ucs_queue_push_head((_queue), &_gp_p->queue_elem); \
        if (UCS_STATUS_IS_ERR(_gp_status)) { \
            break; \
        } \
    }

/* Removes the queue's requests for which _cond holds, calling _cb(req, _arg)
 * for each. */
#define uct_pending_queue_purge(_priv, _queue, _cond, _cb, _arg) \
    { \
        ucs_queue_elem_t **_gp_link = &(_queue)->head; \
        ucs_queue_elem_t *_gp_e; \
        \
        while ((_gp_e = *_gp_link) != NULL) { \
            _priv = (__typeof__(_priv))ucs_container_of(_gp_e, \
                        uct_pending_req_priv_queue_t, queue_elem); \
            if (!(_cond)) { \
                _gp_link = &_gp_e->next; \
                continue; \
            } \
            *_gp_link = _gp_e->next; \
            if ((_queue)->ptail == &_gp_e->next) { \
                (_queue)->ptail = _gp_link; \
            } \
            (void)_cb(ucs_container_of((void*)(_priv), uct_pending_req_t, priv), \
                      _arg); \
        } \
    }

/* ---- completions and short messages ------------------------------------------ */
/* one part of an operation done: the first error is kept, the last part
 * calls the completion */
static UCS_F_ALWAYS_INLINE void uct_invoke_completion(uct_completion_t *comp,
                                                      ucs_status_t status)
{
    uct_completion_update_status(comp, status);
    if (--comp->count == 0) {
        comp->func(comp);
    }
}

/* a short active message's wire form: the 8-byte header, then the payload */
static UCS_F_ALWAYS_INLINE void uct_am_short_fill_data(void *buffer, uint64_t header,
                                                       const void *payload,
                                                       size_t length)
{
    memcpy(buffer, &header, sizeof(header));
    memcpy((char*)buffer + sizeof(header), payload, length);
}

/* ---- iovecs ---------------------------------------------------------------- */
static inline size_t uct_iov_get_length(const uct_iov_t *iov)
{
    return iov->count * iov->length;
}

static inline size_t uct_iov_total_length(const uct_iov_t *iov, size_t iovcnt)
{
    size_t total = 0;
    size_t i;

    for (i = 0; i < iovcnt; ++i) {
        total += uct_iov_get_length(&iov[i]);
    }
    return total;
}

/* where a copy out of an iovec stands: the entry and the offset in it */
typedef struct {
    size_t iov_index;
    size_t buffer_offset;
} ucs_iov_iter_t;

static inline void ucs_iov_iter_init(ucs_iov_iter_t *iter)
{
    iter->iov_index     = 0;
    iter->buffer_offset = 0;
}

/* copies up to limit bytes of the iovec from the iterator's position into
 * buf and moves the iterator past them; returns the bytes copied */
static inline size_t uct_iov_to_buffer(const uct_iov_t *iov, size_t iovcnt,
                                       ucs_iov_iter_t *iter, void *buf, size_t limit)
{
    size_t copied = 0;
    size_t n;

    while ((iter->iov_index < iovcnt) && (copied < limit)) {
        n = uct_iov_get_length(&iov[iter->iov_index]) - iter->buffer_offset;
        if (n > limit - copied) {
            n = limit - copied;
        }
        memcpy((char*)buf + copied,
               (const char*)iov[iter->iov_index].buffer + iter->buffer_offset, n);
        copied              += n;
        iter->buffer_offset += n;
        if (iter->buffer_offset == uct_iov_get_length(&iov[iter->iov_index])) {
            ++iter->iov_index;
            iter->buffer_offset = 0;
        }
    }
    return copied;
}

/* ---- parameter checks (a failed one logs and returns INVALID_PARAM) -------- */
#define UCT_CHECK_PARAM(_cond, _fmt, ...) \
    if (!(_cond)) { \
        ucs_error(_fmt, ## __VA_ARGS__); \
        return UCS_ERR_INVALID_PARAM; \
    }

#define UCT_CHECK_AM_ID(_am_id) \
    UCT_CHECK_PARAM((_am_id) < UCT_AM_ID_MAX, "invalid active message id %d " \
                    "(valid: 0..%d)", (int)(_am_id), (int)UCT_AM_ID_MAX - 1)

#define UCT_CHECK_LENGTH(_length, _min, _max, _name) \
    { \
        size_t _gp_len = (size_t)(_length); \
        UCT_CHECK_PARAM(_gp_len <= (size_t)(_max), "invalid %s length %zu " \
                        "(at most %zu)", _name, _gp_len, (size_t)(_max)); \
        UCT_CHECK_PARAM(_gp_len + 1 > (size_t)(_min), "invalid %s length %zu " \
                        "(at least %zu)", _name, _gp_len, (size_t)(_min)); \
    }

#define UCT_CHECK_IOV_SIZE(_iovcnt, _max_iov, _name) \
    UCT_CHECK_PARAM((size_t)(_iovcnt) <= (size_t)(_max_iov), "%s: %zu iov " \
                    "entries (at most %zu)", _name, (size_t)(_iovcnt), \
                    (size_t)(_max_iov))

#define UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp) \
    UCT_CHECK_PARAM((_comp) == NULL, "ep_check: a completion is not supported"); \
    UCT_CHECK_PARAM((_flags) == 0, "ep_check: unsupported flags 0x%x", \
                    (unsigned)(_flags))

/* ---- active messages ------------------------------------------------------- */
/* hands a received message to the handler UCP set for its id */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_iface_invoke_am(uct_base_iface_t *iface, uint8_t id, void *data,
                    unsigned length, unsigned flags)
{
    uct_am_handler_t *handler = &iface->am[id];

    return handler->cb(handler->arg, data, length, flags);
}

#endif
