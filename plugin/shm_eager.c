/* Zero-copy active messages of the intra-host wire (uct_ep_am_zcopy).
 *
 * UCP sends eager messages of device memory by zero copy when the wire
 * offers it (its zcopy threshold is 1 for memory types the wire's MD
 * registers). The header and host pieces are copied into the reserved FIFO
 * element at once; device pieces are copied device-to-host asynchronously
 * straight into the element (the peer's FIFO mapping is pinned once), on a
 * stream of their own. The element is published, and the UCT completion
 * invoked, from progress once the copies completed. The peer consumes its
 * FIFO in reservation order, so messages sent later on any endpoint to the
 * same peer are delivered after this one: ordering needs nothing more.
 * Host-only messages are copied and published before am_zcopy returns. */
#include "shm.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_cache.h>
#include <ucs/arch/cpu.h>
#include <ucs/sys/string.h>
#include <string.h>

#define GDRPIPE_SHM_EAGER_PROGRESS_MAX 16

typedef struct gdrpipe_shm_eager_op {
    ucs_queue_elem_t queue;
    gp_shm_peer_t    *peer;      /* referenced while the op lives */
    uint64_t         index;      /* the reserved element */
    uint32_t         length;
    uint8_t          am_id;
    uint8_t          failed;
    unsigned         nops;
    unsigned         next;       /* first copy not seen complete */
    gp_cuda_op_t     *ops[GDRPIPE_SHM_AM_MAX_IOV];
    uct_completion_t *comp;
} gdrpipe_shm_eager_op_t;

static ucs_mpool_ops_t gdrpipe_shm_eager_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

ucs_status_t gdrpipe_shm_eager_init(gdrpipe_shm_eager_t *eager)
{
    memset(eager, 0, sizeof(*eager));
    ucs_queue_head_init(&eager->queue);
    return ucs_mpool_init(&eager->op_mp, 0, sizeof(gdrpipe_shm_eager_op_t), 0,
                          UCS_SYS_CACHE_LINE_SIZE, 16, UINT_MAX,
                          &gdrpipe_shm_eager_mpool_ops, "gdrpipe_eager_ops");
}

/* Where a piece of the message lives. UCX's memory-type cache (fed by the
 * allocation hooks, and what UCP itself decided by) answers "host" for
 * most host memory without a driver call; anything else is asked. */
gdrpipe_piece_kind_t gdrpipe_shm_piece_kind(const void *buffer, size_t length,
                                            int *device)
{
    ucs_memory_info_t mem_info;
    gp_mem_info_t info;

    *device = -1;
    if (!gp_cuda_available()) {
        return GDRPIPE_PIECE_HOST;
    }
    if (ucs_memtype_cache_lookup(buffer, length, &mem_info) == UCS_ERR_NO_ELEM) {
        return GDRPIPE_PIECE_HOST;
    }
    if ((gp_cuda_mem_query(buffer, &info) != 0) || (info.kind == GP_MEM_MANAGED)) {
        return GDRPIPE_PIECE_DEVICE_SYNC;   /* the driver copies whatever it is */
    }
    if (info.kind == GP_MEM_HOST) {
        return GDRPIPE_PIECE_HOST;
    }
    *device = info.device;
    return info.legacy_ipc ? GDRPIPE_PIECE_DEVICE_ASYNC : GDRPIPE_PIECE_DEVICE_SYNC;
}

static void gdrpipe_shm_eager_abort(gdrpipe_shm_eager_op_t *op)
{
    unsigned i;

    for (i = 0; i < op->nops; ++i) {
        gp_cuda_op_release(op->ops[i]); /* waits for a copy still running */
    }
    op->nops = 0;
}

ucs_status_t gdrpipe_shm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                     unsigned header_length, const uct_iov_t *iov,
                                     size_t iovcnt, unsigned flags,
                                     uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);
    gdrpipe_piece_kind_t kind[GDRPIPE_SHM_AM_MAX_IOV];
    int device[GDRPIPE_SHM_AM_MAX_IOV];
    gdrpipe_shm_eager_op_t *op = NULL;
    size_t i, len, offset, length;
    int any_device = 0;
    uint64_t index;
    char err[256];
    void *p, *dst;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, GDRPIPE_SHM_AM_MAX_IOV, "am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, GDRPIPE_SHM_AM_MAX_HDR, "am_zcopy header");
    length = header_length + uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(length, 0, ep->max_payload, "am_zcopy");
    if (gdrpipe_shm_ep_am_blocked(ep)) {
        return UCS_ERR_NO_RESOURCE;
    }

    for (i = 0; i < iovcnt; ++i) {
        kind[i] = (uct_iov_get_length(&iov[i]) == 0) ? GDRPIPE_PIECE_HOST :
                  gdrpipe_shm_piece_kind(iov[i].buffer, uct_iov_get_length(&iov[i]),
                                         &device[i]);
        any_device |= (kind[i] != GDRPIPE_PIECE_HOST);
    }

    p = gp_shm_reserve(ep->peer, &index);
    if (ucs_unlikely(p == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (any_device) {
        op = ucs_mpool_get(&iface->eager.op_mp);
        if (op == NULL) {
            gp_shm_commit(ep->peer, index, 0xff, 0);
            return UCS_ERR_NO_MEMORY;
        }
        op->nops = 0;
        op->next = 0;
        gp_shm_peer_pin(iface->core, ep->peer);
    }

    memcpy(p, header, header_length);
    offset = header_length;
    for (i = 0; i < iovcnt; ++i) {
        len = uct_iov_get_length(&iov[i]);
        dst = UCS_PTR_BYTE_OFFSET(p, offset);
        offset += len;
        if (len == 0) {
            continue;
        }
        switch (kind[i]) {
        case GDRPIPE_PIECE_HOST:
            memcpy(dst, iov[i].buffer, len);
            break;
        case GDRPIPE_PIECE_DEVICE_SYNC:
            if (gp_cuda_copy(dst, iov[i].buffer, len, err, sizeof(err)) != 0) {
                goto err_copy;
            }
            ++iface->eager.dev_sync;
            iface->eager.dev_bytes += len;
            break;
        case GDRPIPE_PIECE_DEVICE_ASYNC:
            op->ops[op->nops] = gp_cuda_copy_async_on(dst, iov[i].buffer, len,
                                                      device[i], GP_CUDA_SLOT_EAGER,
                                                      err, sizeof(err));
            if (op->ops[op->nops] == NULL) {
                goto err_copy;
            }
            ++op->nops;
            ++iface->eager.dev_async;
            iface->eager.dev_bytes += len;
            break;
        }
    }

    if ((op == NULL) || (op->nops == 0)) {
        if (op != NULL) {
            ucs_mpool_put(op);
        } else {
            ++iface->eager.host;
        }
        gp_shm_commit(ep->peer, index, id, (uint32_t)length);
        return UCS_OK;
    }
    op->peer   = ep->peer;
    op->index  = index;
    op->length = (uint32_t)length;
    op->am_id  = id;
    op->failed = 0;
    op->comp   = comp;
    gp_shm_peer_hold(iface->core, ep->peer);
    ucs_queue_push(&iface->eager.queue, &op->queue);
    ++iface->eager.outstanding;
    return UCS_INPROGRESS;

err_copy:
    ucs_error("gdrpipe: am_zcopy: copy of %zu bytes from %p failed: %s", len,
              iov[i].buffer, err);
    ++iface->eager.failed;
    gdrpipe_shm_eager_abort(op);
    ucs_mpool_put(op);
    gp_shm_commit(ep->peer, index, 0xff, 0);
    return gp_shm_peer_alive(ep->peer) ? UCS_ERR_IO_ERROR : UCS_ERR_CONNECTION_RESET;
}

/* Publishes the element (or discards it when a copy failed), completes the
 * operation and drops its peer reference. */
static void gdrpipe_shm_eager_finish(gdrpipe_shm_iface_t *iface,
                                     gdrpipe_shm_eager_op_t *op, int invoke)
{
    if (op->failed) {
        gp_shm_commit(op->peer, op->index, 0xff, 0);
        ++iface->eager.failed;
    } else {
        gp_shm_commit(op->peer, op->index, op->am_id, op->length);
    }
    if (invoke && (op->comp != NULL)) {
        uct_invoke_completion(op->comp, op->failed ? UCS_ERR_IO_ERROR : UCS_OK);
    }
    gp_shm_disconnect(iface->core, op->peer);
    --iface->eager.outstanding;
    ucs_mpool_put(op);
}

unsigned gdrpipe_shm_eager_progress(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_eager_op_t *op;
    unsigned count = 0;
    char err[256];
    int ret;

    while (!ucs_queue_is_empty(&iface->eager.queue) &&
           (count < GDRPIPE_SHM_EAGER_PROGRESS_MAX)) {
        op = ucs_queue_head_elem_non_empty(&iface->eager.queue,
                                           gdrpipe_shm_eager_op_t, queue);
        while (op->next < op->nops) {
            ret = gp_cuda_op_poll(op->ops[op->next], err, sizeof(err));
            if (ret == 0) {
                return count;   /* copies of a stream complete in order */
            }
            if (ret < 0) {
                ucs_error("gdrpipe: am_zcopy: device-to-host copy failed: %s", err);
                op->failed = 1;
            }
            gp_cuda_op_release(op->ops[op->next]);
            ++op->next;
        }
        ucs_queue_pull_non_empty(&iface->eager.queue);
        gdrpipe_shm_eager_finish(iface, op, 1);
        ++count;
    }
    return count;
}

void gdrpipe_shm_eager_cleanup(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_eager_op_t *op;

    while (!ucs_queue_is_empty(&iface->eager.queue)) {
        op = ucs_queue_pull_elem_non_empty(&iface->eager.queue, gdrpipe_shm_eager_op_t,
                                           queue);
        while (op->next < op->nops) {
            gp_cuda_op_release(op->ops[op->next++]);
        }
        gdrpipe_shm_eager_finish(iface, op, 0);
    }
    ucs_mpool_cleanup(&iface->eager.op_mp, 1);
}

void gdrpipe_shm_eager_log_stats(const gdrpipe_shm_iface_t *iface)
{
    const gdrpipe_shm_eager_t *e = &iface->eager;

    ucs_info("gdrpipe: am_zcopy: device=%lu (%lu B) async=%lu sync=%lu host=%lu "
             "failed=%lu", e->dev_async + e->dev_sync, e->dev_bytes, e->dev_async,
             e->dev_sync, e->host, e->failed);
}
