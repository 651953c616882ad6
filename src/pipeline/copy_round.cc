// Rounds of direct copies: the copies a progress round starts are queued and
// launched together, one batched copy kernel per device (engine.hpp,
// begin_round). Queueing a copy on the copy engine costs the CPU about as
// much as a kernel launch, so a window of messages pays it once.
#include "engine_impl.hpp"

#include "gdrpipe/cuda/copy_kernel.hpp"
#include "gdrpipe/log.hpp"

#include <algorithm>

namespace gdrpipe::pipeline {
using namespace engine_detail;

namespace engine_detail {

int CopyBatch::poll() {
    if (state != 0) return state;
    cuda::Status err;
    switch (cuda::poll(tok, &err)) {
    case cuda::PollResult::pending: return 0;
    case cuda::PollResult::done: state = 1; break;
    case cuda::PollResult::error:
        state = -1;
        why = err.message;
        break;
    }
    return state;
}

void CopyBatch::wait() noexcept {
    if (state != 0 || tok.empty()) return;
    cuda::Status s = cuda::wait(tok);
    state = s.ok() ? 1 : -1;
    if (!s.ok()) why = s.message;
}

} // namespace engine_detail

void XferEngine::begin_round() noexcept { ++impl_->round_depth; }

void XferEngine::end_round() {
    Impl &m = *impl_;
    if (m.round_depth > 0 && --m.round_depth == 0 && !m.queued.empty()) m.flush_queued();
}

bool XferEngine::Impl::can_queue(const Xfer *x, int remote_dev) {
    if (round_depth == 0 || batch_off || !cfg.copy_kernel || !cuda::copy_kernel_built())
        return false;
    const int dev = x->mem.dev;
    if (dev < 0 || x->mem.segs.empty() || x->mem.segs.size() > GP_COPY_BATCH_MAX) return false;
    for (const LocalSeg &s : x->mem.segs) {
        if (s.dev != dev) return false; // a kernel of `dev` reads and writes its own memory
    }
    // ... and the peer's, only with peer access (the copy engine does without)
    return dev == remote_dev || cuda::devices().enable_peer_access(dev, remote_dev) == CUDA_SUCCESS;
}

int XferEngine::Impl::poll_direct(Xfer *x, std::string *why) {
    if (x->batch) {
        const int r = x->batch->poll();
        if (r < 0 && why != nullptr) *why = x->batch->why;
        return r;
    }
    return poll_tokens(x->toks, why);
}

void XferEngine::Impl::wait_direct(Xfer *x) noexcept {
    wait_tokens(x->toks);
    if (x->batch) x->batch->wait();
}

void XferEngine::Impl::flush_queued() {
    std::vector<Xfer *> round;
    round.swap(queued);
    // the transfer whose batched launch failed: alone on the copy engine,
    // else (as a failed direct copy in try_direct) staged
    auto alone = [this](Xfer *x) {
        if (issue_direct(x, x->peer_ptr, x->remote_dev)) return;
        x->direct = false;
        st.fallbacks++;
        const int r = staged_kickoff(x);
        if (r < 0) finish(x, r);
    };
    std::vector<Xfer *> group;
    std::vector<gp_copy_desc_t> desc;
    while (!round.empty()) {
        // one device's transfers, in the order they were started
        const int dev = round.front()->mem.dev;
        group.clear();
        auto rest = std::stable_partition(round.begin(), round.end(),
                                          [dev](const Xfer *x) { return x->mem.dev == dev; });
        group.assign(round.begin(), rest);
        round.erase(round.begin(), rest);
        size_t i = 0;
        while (i < group.size()) {
            // as many whole transfers as fit one launch
            desc.clear();
            size_t j = i;
            for (; j < group.size(); ++j) {
                Xfer *x = group[j];
                if (desc.size() + x->mem.segs.size() > GP_COPY_BATCH_MAX) break;
                size_t off = 0;
                for (const LocalSeg &s : x->mem.segs) {
                    const auto local = reinterpret_cast<unsigned long long>(s.p);
                    const auto peer = reinterpret_cast<unsigned long long>(x->peer_ptr + off);
                    desc.push_back(x->is_get ? gp_copy_desc_t{local, peer, s.len}
                                             : gp_copy_desc_t{peer, local, s.len});
                    off += s.len;
                }
            }
            if (j - i == 1) {
                group[i]->queued = false;
                alone(group[i]); // a lone copy: the copy engine, as outside a round
                i = j;
                continue;
            }
            auto batch = std::make_shared<CopyBatch>();
            cuda::Status s =
                cuda::copy_batch(dev, kSlotDirect, desc.data(), desc.size(), &batch->tok);
            if (!s.ok()) {
                GP_DEBUG("xfer: batched copy of %zu transfers on device %d failed (%s): one by "
                         "one from now on", j - i, dev, s.message.c_str());
                batch_off = true;
                batch->state = 1; // nothing in flight
                for (; i < j; ++i) {
                    group[i]->queued = false;
                    alone(group[i]);
                }
                continue;
            }
            st.copy_batches++;
            st.batched += j - i;
            for (; i < j; ++i) {
                group[i]->queued = false;
                group[i]->batch = batch;
            }
        }
    }
}

} // namespace gdrpipe::pipeline
