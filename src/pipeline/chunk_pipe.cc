// The wire-agnostic chunk pipeline of staged transfers (chunk_pipe.hpp).
#include "gdrpipe/pipeline/chunk_pipe.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/log.hpp"

#include <algorithm>
#include <cerrno>

namespace gdrpipe::pipeline {

cuda::Status StreamCopier::start(const LocalMem &m, std::size_t off, std::size_t n, char *slot,
                                 bool to_slot, CopyJob *job) {
    return copy_local(m, off, n, slot, -1, to_slot, slot_, job->toks);
}

int StreamCopier::poll(CopyJob *job, std::string *why) { return poll_tokens(job->toks, why); }

void StreamCopier::wait(CopyJob *job) noexcept { wait_tokens(job->toks); }

bool classify_one(void *p, std::size_t len, LocalMem *out) {
    struct iovec v{p, len};
    return classify(&v, 1, out);
}

void ChunkPipe::init(Role role, ChunkWire *wire, ChunkCopier *copier, LocalMem mem,
                     std::size_t chunk, unsigned depth, bool wait_drain) {
    role_ = role;
    wire_ = wire;
    copier_ = copier;
    mem_ = std::move(mem);
    chunk_ = chunk == 0 ? 1 : chunk;
    depth_ = depth == 0 ? 1 : depth;
    wait_drain_ = wait_drain;
    nchunks_ = (mem_.len + chunk_ - 1) / chunk_;
    next_issue_ = 0;
    next_done_ = 0;
    inflight_.clear();
    failed_ = false;
}

std::size_t ChunkPipe::chunk_len(std::uint64_t i) const noexcept {
    const std::size_t off = std::size_t(i) * chunk_;
    return off >= mem_.len ? 0 : std::min(chunk_, mem_.len - off);
}

int ChunkPipe::fail(int code, const std::string &msg, std::string *why) {
    if (why != nullptr) *why = msg;
    abort();
    failed_ = true;
    return code;
}

int ChunkPipe::step(bool *busy, std::string *why) {
    if (failed_) return -EIO;
    std::string wmsg;
    if (int r = wire_->aborted(&wmsg); r != 0) return fail(r, wmsg, why);
    const bool prod = role_ == Role::producer;
    // issue: as far as the depth and the wire allow
    while (next_issue_ < nchunks_ && inflight_.size() < depth_) {
        Flight f;
        f.chunk = next_issue_;
        if (prod ? !wire_->acquire(f.chunk, &f.slot) : !wire_->landed(f.chunk, &f.slot)) break;
        const std::size_t off = std::size_t(f.chunk) * chunk_;
        cuda::Status st =
            copier_->start(mem_, off, chunk_len(f.chunk), f.slot.p, prod, &f.job);
        if (!st.ok()) {
            copier_->wait(&f.job);
            if (prod) wire_->unacquire(f.slot);
            else wire_->release(f.chunk, f.slot, -EIO);
            return fail(-EIO, st.message, why);
        }
        inflight_.push_back(std::move(f));
        ++next_issue_;
        *busy = true;
    }
    // retire in chunk order
    while (!inflight_.empty()) {
        Flight &f = inflight_.front();
        if (!f.copied) {
            std::string cmsg;
            const int r = copier_->poll(&f.job, &cmsg);
            if (r == 0) break;
            if (r < 0) {
                Flight bad = std::move(f);
                inflight_.pop_front();
                if (prod) wire_->unacquire(bad.slot);
                else wire_->release(bad.chunk, bad.slot, -EIO);
                return fail(-EIO, cmsg, why);
            }
            f.copied = true;
            *busy = true;
        }
        if (prod) {
            if (!wire_->ship(f.chunk, f.slot, chunk_len(f.chunk))) break;
        } else {
            wire_->release(f.chunk, f.slot, 0);
        }
        inflight_.pop_front();
        ++next_done_;
        *busy = true;
    }
    if (next_done_ < nchunks_) return 0;
    if (prod && wait_drain_ && !wire_->drained(nchunks_)) return 0;
    return 1;
}

void ChunkPipe::abort() noexcept {
    while (!inflight_.empty()) {
        Flight f = std::move(inflight_.front());
        inflight_.pop_front();
        if (!f.copied) copier_->wait(&f.job);
        if (role_ == Role::producer) wire_->unacquire(f.slot);
        else wire_->release(f.chunk, f.slot, -ECANCELED);
    }
}

} // namespace gdrpipe::pipeline
