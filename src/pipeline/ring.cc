// Staging segments: memfd creation, attaching a peer's, pinning.
#include "gdrpipe/pipeline/ring.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace gdrpipe::pipeline {

size_t segment_bytes(unsigned nrings, unsigned depth, size_t chunk) noexcept {
    if (nrings == 0 || nrings > kMaxRings || depth == 0 || depth > kMaxDepth ||
        chunk < kMinChunk || chunk % kMinChunk != 0 || chunk > (size_t{1} << 30)) {
        return 0;
    }
    return kSegHeaderBytes + size_t(nrings) * (kRingHeaderBytes + size_t(depth) * chunk);
}

RingHeader *StagingSegment::ring(unsigned i) const noexcept {
    auto *base = static_cast<char *>(map_) + kSegHeaderBytes + size_t(i) * hdr_->ring_stride;
    return reinterpret_cast<RingHeader *>(base);
}

char *StagingSegment::slot(unsigned r, uint64_t chunk_index) const noexcept {
    auto *base = reinterpret_cast<char *>(ring(r)) + kRingHeaderBytes;
    return base + (chunk_index % hdr_->depth) * hdr_->chunk;
}

void StagingSegment::pin() noexcept {
    auto &drv = cuda::driver();
    if (!drv.available() || cuda::devices().count() <= 0) return;
    cuda::ScopedContext scope(0);
    if (!scope.ok()) return;
    CUresult r = drv.api().cuMemHostRegister(map_, size_, CU_MEMHOSTREGISTER_PORTABLE);
    if (r == CUDA_SUCCESS) {
        pinned_ = true;
        pin_device_ = 0;
    } else {
        GP_WARN("staging ring: cuMemHostRegister(%zu bytes): %s (continuing unpinned)",
                size_, cuda::describe(r).c_str());
    }
}

std::unique_ptr<StagingSegment> StagingSegment::create(unsigned nrings, unsigned depth,
                                                       size_t chunk, std::string *err) {
    size_t size = segment_bytes(nrings, depth, chunk);
    if (size == 0) {
        *err = "invalid staging ring shape";
        return nullptr;
    }
    std::unique_ptr<StagingSegment> s(new StagingSegment());
    s->fd_ = ::memfd_create("gdrpipe-stage", MFD_CLOEXEC);
    if (s->fd_ < 0) {
        *err = std::string("memfd_create: ") + std::strerror(errno);
        return nullptr;
    }
    if (::ftruncate(s->fd_, off_t(size)) != 0) {
        *err = std::string("ftruncate: ") + std::strerror(errno);
        return nullptr;
    }
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
    if (p == MAP_FAILED) {
        *err = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    s->map_ = p;
    s->size_ = size;
    s->hdr_ = static_cast<SegHeader *>(p);
    uint64_t id = 0;
    if (::getrandom(&id, sizeof(id), 0) != sizeof(id) || id == 0) {
        id = (uint64_t(::getpid()) << 32) ^ reinterpret_cast<uintptr_t>(p) ^ 0x5bd1e995u;
    }
    SegHeader *h = s->hdr_;
    h->seg_id = id;
    h->size = size;
    h->chunk = chunk;
    h->ring_stride = kRingHeaderBytes + size_t(depth) * chunk;
    h->nrings = nrings;
    h->depth = depth;
    h->owner_pid = ::getpid();
    for (unsigned i = 0; i < nrings; ++i) {
        RingHeader *r = new (s->ring(i)) RingHeader;
        r->xfer_id.store(0, std::memory_order_relaxed);
        r->produced.store(0, std::memory_order_relaxed);
        r->consumed.store(0, std::memory_order_relaxed);
        r->error.store(0, std::memory_order_relaxed);
    }
    h->version = kSegVersion;
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kSegMagic;
    s->pin();
    return s;
}

std::unique_ptr<StagingSegment> StagingSegment::attach(pid_t pid, int fd, uint64_t seg_id,
                                                       uint64_t size, std::string *err) {
    if (pid <= 0 || fd < 0 || size < kSegHeaderBytes || size > (uint64_t{1} << 40)) {
        *err = "invalid staging segment reference";
        return nullptr;
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(pid), fd);
    std::unique_ptr<StagingSegment> s(new StagingSegment());
    s->fd_ = ::open(path, O_RDWR | O_CLOEXEC);
    if (s->fd_ < 0) {
        *err = std::string("open ") + path + ": " + std::strerror(errno);
        return nullptr;
    }
    struct stat st;
    if (::fstat(s->fd_, &st) != 0 || uint64_t(st.st_size) != size) {
        *err = "staging segment size mismatch";
        return nullptr;
    }
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
    if (p == MAP_FAILED) {
        *err = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    s->map_ = p;
    s->size_ = size;
    s->hdr_ = static_cast<SegHeader *>(p);
    const SegHeader &h = *s->hdr_;
    if (h.magic != kSegMagic || h.version != kSegVersion || h.seg_id != seg_id ||
        h.size != size || h.owner_pid != pid ||
        segment_bytes(h.nrings, h.depth, h.chunk) != size ||
        h.ring_stride != kRingHeaderBytes + size_t(h.depth) * h.chunk) {
        *err = "staging segment header mismatch";
        return nullptr;
    }
    s->pin();
    return s;
}

StagingSegment::~StagingSegment() {
    if (pinned_) {
        auto &drv = cuda::driver();
        cuda::ScopedContext scope(pin_device_);
        CUresult r = drv.api().cuMemHostUnregister(map_);
        if (r != CUDA_SUCCESS) {
            GP_DEBUG("staging ring: cuMemHostUnregister: %s", cuda::describe(r).c_str());
        }
    }
    if (map_ != nullptr) ::munmap(map_, size_);
    if (fd_ >= 0) ::close(fd_);
}

} // namespace gdrpipe::pipeline
