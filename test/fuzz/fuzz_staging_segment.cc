// A requester's staging segment as the owner attaches it
// (pipeline::StagingSegment::attach): a sealed memfd that starts with the
// input (the segment header, possibly more) and is zero after it; its size
// is what the header claims when that is at most 1 MiB. Accepted only with a
// header that matches the reference and describes exactly the segment's
// size; then every ring and slot the owner may touch lies inside the mapping.
#include "fuzz_target.hpp"

#include "gdrpipe/pipeline/ring.hpp"
#include "gdrpipe/wire/sealed_memfd.hpp"

#include <unistd.h>

#include <cstddef>
#include <string>

using namespace gdrpipe;
using namespace gdrpipe::pipeline;

namespace {
constexpr std::size_t kMaxSize = 1 << 20;
constexpr std::size_t kMaxInput = 3 * kSegHeaderBytes;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < sizeof(SegHeader) || size > kMaxInput) return 0;
    SegHeader h;
    std::memcpy(&h, data, sizeof(h));
    // the segment's real size: the header's claim when it is small enough
    // (to reach the accepting path), else the input's length
    const std::size_t seg = h.size >= kSegHeaderBytes && h.size <= kMaxSize ? h.size : kSegHeaderBytes;
    std::string err;
    const int fd = wire::create_sealed_memfd("fuzz-stage", seg, &err);
    if (fd < 0) return 0;
    // the owner checks the header names the requester: make it ours
    const std::int32_t me = ::getpid();
    if (::pwrite(fd, data, std::min(size, seg), 0) < 0 ||
        ::pwrite(fd, &me, sizeof(me), offsetof(SegHeader, owner_pid)) < 0) {
        ::close(fd);
        return 0;
    }
    auto s = StagingSegment::attach(::getpid(), fd, h.seg_id, seg, &err);
    if (s) {
        GP_FUZZ_ASSERT(segment_bytes(s->nrings(), s->depth(), s->chunk()) == s->size());
        const auto *lo = reinterpret_cast<const char *>(s->ring(0)) - kSegHeaderBytes;
        for (unsigned r = 0; r < s->nrings(); ++r) {
            for (unsigned d = 0; d < s->depth(); ++d) {
                const char *p = s->slot(r, d);
                GP_FUZZ_ASSERT(p >= lo && p + s->chunk() <= lo + s->size());
            }
        }
    }
    ::close(fd);
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    std::string err;
    for (unsigned depth : {1u, 3u}) {
        auto s = StagingSegment::create(1, depth, kMinChunk, &err);
        if (!s) continue;
        FuzzBytes b(sizeof(SegHeader)); // the header; the rest of a new segment is zero
        if (::pread(s->fd(), b.data(), b.size(), 0) == ssize_t(b.size())) out.push_back(std::move(b));
    }
    return out;
}
