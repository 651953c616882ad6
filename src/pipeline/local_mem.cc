// Local memory segments and tracked chunk copies.
#include "gdrpipe/pipeline/local_mem.hpp"

#include "gdrpipe/cuda/memory.hpp"
#include "../hooks/proc_maps.hpp"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gdrpipe::pipeline {

bool classify(const struct iovec *iov, size_t iovcnt, LocalMem *out) {
    *out = LocalMem{};
    const bool have_cuda = cuda::driver().available();
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].iov_len == 0) continue;
        LocalSeg s;
        s.p = static_cast<char *>(iov[i].iov_base);
        s.len = iov[i].iov_len;
        if (have_cuda) {
            cuda::MemInfo mi;
            if (cuda::query_kind(s.p, &mi) != CUDA_SUCCESS) return false;
            if (mi.kind != cuda::MemKind::host) s.dev = mi.device < 0 ? 0 : mi.device;
        }
        if (s.dev >= 0) {
            out->all_host = false;
            if (out->dev < 0) out->dev = s.dev;
        }
        out->len += s.len;
        out->segs.push_back(s);
    }
    return true;
}

bool cpu_accessible(const LocalSeg &s) noexcept {
    if (s.len == 0) return true;
    char b[2];
    struct iovec l[2] = {{&b[0], 1}, {&b[1], 1}};
    struct iovec r[2] = {{s.p, 1}, {s.p + s.len - 1, 1}};
    const ssize_t n = process_vm_readv(getpid(), l, 2, r, 2, 0);
    if (n == 2) return true;
    if (!(n == 1 || (n < 0 && errno == EFAULT))) return true; // cannot tell
    // the kernel also refuses readable mappings of device memory or I/O
    // (VM_PFNMAP, e.g. a GPU BAR mapped for the CPU): only memory mapped
    // without read permission, or not at all, is what a freed device
    // buffer leaves (the rare path: the maps are read only here)
    try {
        std::vector<hooks::detail::MapEntry> maps;
        if (!hooks::detail::read_proc_maps(maps)) return true;
        const uintptr_t lo = reinterpret_cast<uintptr_t>(s.p), hi = lo + s.len - 1;
        for (uintptr_t a : {lo, hi}) {
            bool readable = false;
            for (const auto &m : maps) {
                if (a >= m.start && a < m.end) {
                    readable = (m.prot & PROT_READ) != 0;
                    break;
                }
            }
            if (!readable) return false;
        }
        return true;
    } catch (...) {
        return true;
    }
}

cuda::Status copy_local(const LocalMem &m, size_t off, size_t n, char *flat, int flat_dev,
                        bool to_flat, unsigned slot, Tokens &toks) {
    size_t seg_start = 0;
    size_t done = 0;
    for (const LocalSeg &s : m.segs) {
        if (done == n) break;
        const size_t seg_end = seg_start + s.len;
        if (off + done < seg_end) {
            const size_t in = off + done - seg_start;
            const size_t k = std::min(s.len - in, n - done);
            char *lp = s.p + in;
            char *fp = flat + done;
            if (s.dev < 0 && flat_dev < 0) {
                if (to_flat) std::memcpy(fp, lp, k);
                else std::memcpy(lp, fp, k);
            } else {
                cuda::CopyOptions opt;
                opt.device = s.dev >= 0 ? s.dev : flat_dev;
                opt.slot = slot;
                cuda::CopyToken t;
                cuda::Status st = to_flat ? cuda::copy_async(fp, lp, k, &t, opt)
                                          : cuda::copy_async(lp, fp, k, &t, opt);
                if (!st.ok()) return st;
                if (!t.empty()) toks.push_back(t);
            }
            done += k;
        }
        seg_start = seg_end;
    }
    return {};
}

int poll_tokens(Tokens &toks, std::string *why) {
    while (!toks.empty()) {
        cuda::Status st;
        cuda::PollResult r = cuda::poll(toks.front(), &st);
        if (r == cuda::PollResult::pending) return 0;
        toks.erase(toks.begin());
        if (r == cuda::PollResult::error) {
            if (why != nullptr) *why = st.message;
            wait_tokens(toks);
            return -1;
        }
    }
    return 1;
}

void wait_tokens(Tokens &toks) noexcept {
    for (auto &t : toks) {
        if (!t.empty()) cuda::wait(t);
    }
    toks.clear();
}

} // namespace gdrpipe::pipeline
