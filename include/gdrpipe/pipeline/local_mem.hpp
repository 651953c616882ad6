// Local memory of a transfer (iov segments with their device) and chunk
// copies between it and a flat buffer (a staging slot or an imported peer
// buffer), tracked by copy tokens. Used by the intra-host engine and, through
// the chunk pipeline (chunk_pipe.hpp), by the RDMA wire.
#pragma once

#include "gdrpipe/cuda/copy.hpp"

#include <sys/uio.h>

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace gdrpipe::pipeline {

struct LocalSeg {
    char *p = nullptr;
    size_t len = 0;
    int dev = -1; // -1: host memory (CPU-accessible)
};

struct LocalMem {
    std::vector<LocalSeg> segs;
    size_t len = 0;
    bool all_host = true;
    int dev = -1; // first device seen, -1 if none
};

// Classifies the iov entries (cuda::query); false when the driver refuses.
bool classify(const struct iovec *iov, size_t iovcnt, LocalMem *out);

// Whether the CPU can read the first and the last byte of a host segment.
// A device buffer freed while its transfer is in flight is classified host
// (the driver no longer knows it) but lies in the driver's reserved,
// inaccessible range, where a copy would fault; false there. A byte the
// kernel will not copy (process_vm_readv) is looked up in /proc/self/maps:
// a readable mapping of device memory or I/O counts as accessible. True
// when neither can tell.
bool cpu_accessible(const LocalSeg &s) noexcept;

using Tokens = std::vector<cuda::CopyToken>;

// Copies local [off, off+n) to (to_flat) or from `flat`; flat_dev is the
// device of `flat` (-1 host). Host-host pieces are memcpy'd at once, others
// issued on stream `slot` of the device that does the copy, tokens appended.
cuda::Status copy_local(const LocalMem &m, size_t off, size_t n, char *flat, int flat_dev,
                        bool to_flat, unsigned slot, Tokens &toks);

// 1 all done (tokens emptied), 0 pending, -1 a copy failed (*why filled).
int poll_tokens(Tokens &toks, std::string *why);
// Blocks until every token completed (drops errors).
void wait_tokens(Tokens &toks) noexcept;

} // namespace gdrpipe::pipeline
