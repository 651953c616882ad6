#include "gdrpipe/wire/shm_iface.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/wire/sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace gdrpipe::wire {

namespace {

uint32_t round_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p < v && p < (1u << 30)) p <<= 1;
    return p;
}

uint64_t random_id() {
    std::random_device rd;
    uint64_t v = (uint64_t(rd()) << 32) ^ rd();
    return v != 0 ? v : 1;
}

uint64_t peer_key(pid_t pid, uint64_t seg_id) {
    return seg_id ^ (uint64_t(uint32_t(pid)) * 0x9e3779b97f4a7c15ull);
}

} // namespace

uint64_t process_start_time(pid_t pid) noexcept {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[1024];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    // the command name may hold spaces and parentheses: skip past the last ')'
    const char *p = std::strrchr(buf, ')');
    if (p == nullptr) return 0;
    // fields after ')' start at field 3 (state); starttime is field 22
    int field = 2;
    for (const char *c = p + 1; *c != '\0'; ++c) {
        if (*c == ' ') {
            ++field;
            if (field == 22) return std::strtoull(c + 1, nullptr, 10);
        }
    }
    return 0;
}

ShmPeer::~ShmPeer() {
    if (map_ != nullptr) ::munmap(map_, map_size_);
}

bool ShmPeer::alive() const noexcept {
    uint64_t t = process_start_time(pid_);
    return t != 0 && t == start_time_;
}

std::unique_ptr<ShmIface> ShmIface::open(const ShmConfig &cfg, std::string *err) {
    std::unique_ptr<ShmIface> iface(new ShmIface());
    uint32_t n = round_pow2(cfg.num_elems < 2 ? 2 : cfg.num_elems);
    uint32_t esize = uint32_t((sizeof(ElemHeader) + cfg.seg_size + 63) / 64 * 64);
    size_t size = Fifo::segment_size(n, esize);
    size = (size + 4095) / 4096 * 4096;

    iface->fd_ = create_sealed_memfd("gdrpipe-fifo", size, err);
    if (iface->fd_ < 0) {
        return nullptr;
    }
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, iface->fd_, 0);
    if (p == MAP_FAILED) {
        *err = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    iface->map_ = p;
    iface->map_size_ = size;
    iface->seg_id_ = random_id();
    Fifo::format(p, n, esize, int32_t(::getpid()), iface->seg_id_,
                 process_start_time(::getpid()));
    iface->rx_ = Fifo(p, FifoShape{n, esize});
    GP_DEBUG("shm iface: fifo %u x %u bytes, fd %d, seg %016llx", n, esize,
             iface->fd_, static_cast<unsigned long long>(iface->seg_id_));
    return iface;
}

ShmIface::~ShmIface() {
    for (auto &kv : peers_) {
        GP_DEBUG("shm iface: peer pid %d still referenced (%u) at close",
                 kv.second->pid_, kv.second->refs_);
        delete kv.second;
    }
    if (map_ != nullptr) ::munmap(map_, map_size_);
    if (fd_ >= 0) ::close(fd_);
}

ShmAddress ShmIface::address() const noexcept {
    ShmAddress a{};
    a.magic = kShmMagic;
    a.version = kShmVersion;
    a.pid = int32_t(::getpid());
    a.fd = fd_;
    a.seg_id = seg_id_;
    return a;
}

const char *ShmIface::check_address(const void *addr, size_t len) noexcept {
    if (addr == nullptr || len < sizeof(ShmAddress)) return "address truncated";
    ShmAddress a;
    std::memcpy(&a, addr, sizeof(a));
    if (a.magic != kShmMagic) return "not a gdrpipe shm address";
    if (a.version != kShmVersion) {
        static thread_local char why[160];
        std::snprintf(why, sizeof(why),
                      "the peer speaks wire version %u, this process %u: the processes run "
                      "different gdrpipe versions (use one gdrpipe everywhere)",
                      unsigned(a.version), unsigned(kShmVersion));
        return why;
    }
    if (a.pid <= 0 || a.fd < 0 || a.seg_id == 0) return "invalid address fields";
    return nullptr;
}

ShmPeer *ShmIface::connect(const void *addr, size_t len, std::string *err) {
    if (const char *why = check_address(addr, len)) {
        *err = why;
        return nullptr;
    }
    ShmAddress a;
    std::memcpy(&a, addr, sizeof(a));
    std::lock_guard<std::mutex> g(lock_);
    uint64_t key = peer_key(a.pid, a.seg_id);
    auto it = peers_.find(key);
    if (it != peers_.end()) {
        ++it->second->refs_;
        return it->second;
    }

    std::string why;
    int fd = open_peer_segment(a.pid, int(a.fd), &why);
    if (fd < 0) {
        *err = "peer segment rejected: " + why;
        return nullptr;
    }
    struct stat st{};
    if (::fstat(fd, &st) != 0 || st.st_size < off_t(sizeof(FifoHeader))) {
        ::close(fd);
        *err = "peer segment too small";
        return nullptr;
    }
    size_t size = size_t(st.st_size);
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        *err = std::string("mmap peer segment: ") + std::strerror(errno);
        return nullptr;
    }
    FifoShape shape;
    if (const char *why = Fifo::validate(p, size, a.seg_id, &shape)) {
        ::munmap(p, size);
        *err = std::string("peer segment rejected: ") + why;
        return nullptr;
    }
    Fifo fifo(p, shape); // the validated shape, not a second read of the header
    if (fifo.max_payload() < max_payload()) {
        // our messages are bounded by our own element size (max_payload() is
        // what this interface sends and receives): they cannot be split, so
        // a peer with smaller elements cannot take them
        *err = "UCX_GDRPIPE_SEG_SIZE differs between the processes: pid " + std::to_string(a.pid) +
               " accepts messages of up to " + std::to_string(fifo.max_payload()) +
               " bytes, this process (pid " + std::to_string(::getpid()) + ") sends up to " +
               std::to_string(max_payload()) + "; set the same UCX_GDRPIPE_SEG_SIZE in every process";
        ::munmap(p, size);
        return nullptr;
    }
    // the owner's start time: the kernel's, which the header must agree
    // with; kept privately from here on (any producer can rewrite the header)
    const uint64_t claimed = fifo.header()->owner_start_time;
    const uint64_t kernel = process_start_time(a.pid);
    if (kernel != 0 && claimed != kernel) {
        ::munmap(p, size);
        *err = "peer segment rejected: its owner start time is not that of pid " +
               std::to_string(a.pid) + " (a stale segment, or its header was rewritten)";
        return nullptr;
    }
    auto *peer = new ShmPeer();
    peer->pid_ = a.pid;
    peer->seg_id_ = a.seg_id;
    peer->map_ = p;
    peer->map_size_ = size;
    peer->fifo_ = fifo;
    peer->start_time_ = kernel != 0 ? kernel : claimed;
    peer->refs_ = 1;
    peers_.emplace(key, peer);
    GP_DEBUG("shm iface: connected to pid %d seg %016llx", int(a.pid),
             static_cast<unsigned long long>(a.seg_id));
    return peer;
}

void ShmIface::release(ShmPeer *peer) {
    std::lock_guard<std::mutex> g(lock_);
    if (--peer->refs_ > 0) return;
    peers_.erase(peer_key(peer->pid_, peer->seg_id_));
    delete peer;
}

size_t ShmIface::num_peers() const {
    std::lock_guard<std::mutex> g(lock_);
    return peers_.size();
}

} // namespace gdrpipe::wire
