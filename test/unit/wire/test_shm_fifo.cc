#include "gdrpipe/wire/shm_fifo.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include "gp_catch.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace gdrpipe::wire;

namespace {
std::vector<uint8_t> segment(uint32_t n, uint32_t esize) {
    return std::vector<uint8_t>(Fifo::segment_size(n, esize) + 64);
}
void *aligned(std::vector<uint8_t> &v) {
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
}
} // namespace

TEST_CASE("fifo delivers in order and reports full", "[wire]") {
    auto mem = segment(4, 64);
    void *base = aligned(mem);
    Fifo::format(base, 4, 64, 1, 42, 0);
    REQUIRE(Fifo::validate(base, Fifo::segment_size(4, 64), 42) == nullptr);
    Fifo tx(base, 0), rx(base, 0);
    CHECK(tx.max_payload() == 48);

    for (uint32_t i = 0; i < 4; ++i) {
        uint64_t idx;
        void *p = tx.reserve(&idx);
        REQUIRE(p != nullptr);
        CHECK(idx == i);
        std::memcpy(p, &i, sizeof(i));
        tx.commit(idx, uint8_t(i + 1), sizeof(i));
    }
    uint64_t idx;
    CHECK(tx.reserve(&idx) == nullptr);   // full
    CHECK_FALSE(tx.has_space());

    for (uint32_t i = 0; i < 4; ++i) {
        Fifo::Message m{};
        REQUIRE(rx.peek(&m));
        CHECK(m.am_id == i + 1);
        CHECK(m.length == sizeof(uint32_t));
        uint32_t v;
        std::memcpy(&v, m.data, sizeof(v));
        CHECK(v == i);
        rx.release();
        CHECK(tx.has_space());
    }
    Fifo::Message m{};
    CHECK_FALSE(rx.peek(&m));
}

TEST_CASE("fifo: reserved but uncommitted element blocks the consumer", "[wire]") {
    auto mem = segment(8, 64);
    void *base = aligned(mem);
    Fifo::format(base, 8, 64, 1, 7, 0);
    Fifo tx(base, 0), rx(base, 0);
    uint64_t a, b;
    REQUIRE(tx.reserve(&a) != nullptr);
    REQUIRE(tx.reserve(&b) != nullptr);
    tx.commit(b, 5, 0);
    Fifo::Message m{};
    // element a not yet published: order kept, however long the consumer
    // polls (its producer, this process, is alive)
    for (uint32_t i = 0; i < 3 * Fifo::kClaimPollsBeforeCheck; ++i) REQUIRE_FALSE(rx.peek(&m));
    CHECK(rx.reclaimed() == 0);
    tx.commit(a, 4, 0);
    REQUIRE(rx.peek(&m));
    CHECK(m.am_id == 4);
    rx.release();
    REQUIRE(rx.peek(&m));
    CHECK(m.am_id == 5);
}

TEST_CASE("fifo: a producer that dies between reserve and commit does not wedge the consumer",
          "[wire][security]") {
    constexpr uint32_t kN = 4;
    const size_t size = Fifo::segment_size(kN, 64);
    void *base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base != MAP_FAILED);
    Fifo::format(base, kN, 64, 1, 11, 0);
    FifoShape shape;
    REQUIRE(Fifo::validate(base, size, 11, &shape) == nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        Fifo tx(base, shape);
        uint64_t idx;
        _exit(tx.reserve(&idx) != nullptr && idx == 0 ? 0 : 1); // killed before its commit
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    // a live producer's message behind the dead one's element
    Fifo tx(base, shape), rx(base, shape);
    uint64_t idx;
    void *p = tx.reserve(&idx);
    REQUIRE(p != nullptr);
    CHECK(idx == 1);
    std::memcpy(p, "live", 4);
    tx.commit(idx, 7, 4);
    std::vector<int> got; // am ids in order
    for (uint32_t i = 0; i < 4 * Fifo::kClaimPollsBeforeCheck && got.size() < 2; ++i) {
        Fifo::Message m{};
        if (!rx.peek(&m)) continue;
        got.push_back(m.am_id);
        if (m.am_id == 7) CHECK(std::memcmp(m.data, "live", 4) == 0);
        if (m.am_id == kAmIdDiscard) CHECK(m.length == 0);
        rx.release();
    }
    REQUIRE(got.size() == 2);
    CHECK(got[0] == kAmIdDiscard);
    CHECK(got[1] == 7);
    CHECK(rx.reclaimed() == 1);
    // the slots go round again: a full lap of messages
    for (uint32_t i = 0; i < kN; ++i) {
        REQUIRE(tx.reserve(&idx) != nullptr);
        tx.commit(idx, uint8_t(i), 0);
    }
    CHECK_FALSE(tx.has_space());
    for (uint32_t i = 0; i < kN; ++i) {
        Fifo::Message m{};
        REQUIRE(rx.peek(&m));
        CHECK(m.am_id == i);
        rx.release();
    }
    munmap(base, size);
}

TEST_CASE("fifo: whatever a producer writes into the shared words, reserve() ends in bounds",
          "[wire][security]") {
    constexpr uint32_t kN = 8;
    auto mem = segment(kN, 64);
    void *base = aligned(mem);
    const size_t size = Fifo::segment_size(kN, 64);
    Fifo::format(base, kN, 64, 1, 5, 0);
    FifoShape shape;
    REQUIRE(Fifo::validate(base, size, 5, &shape) == nullptr);
    auto *h = static_cast<FifoHeader *>(base);
    auto *elems = static_cast<uint8_t *>(base) + 64 * ((sizeof(FifoHeader) + 63) / 64);
    const auto *lo = static_cast<const uint8_t *>(base), *hi = lo + size;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 2000; ++round) {
        // head and every slot's word: random, near-valid, or a later lap
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        h->head.store(round % 3 == 0 ? x : x % 64, std::memory_order_relaxed);
        for (uint32_t i = 0; i < kN; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            auto *e = reinterpret_cast<ElemHeader *>(elems + size_t(i) * 64);
            const uint64_t v = round % 2 ? x : (x & 0xc00000000000003full);
            e->seq.store(v, std::memory_order_relaxed);
        }
        Fifo tx(base, shape);
        for (int k = 0; k < 4; ++k) {
            uint64_t idx;
            auto *p = static_cast<uint8_t *>(tx.reserve(&idx));
            if (p == nullptr) break;
            REQUIRE((p > lo && p + tx.max_payload() <= hi));
            tx.commit(idx, 1, 0);
        }
        (void)tx.has_space();
    }
}

TEST_CASE("fifo: a head written far ahead by another producer heals", "[wire][security]") {
    constexpr uint32_t kN = 8;
    auto mem = segment(kN, 64);
    void *base = aligned(mem);
    Fifo::format(base, kN, 64, 1, 6, 0);
    Fifo tx(base, 0), rx(base, 0);
    uint64_t idx;
    REQUIRE(tx.reserve(&idx) != nullptr);
    tx.commit(idx, 1, 0);
    // a producer moves head 1000 laps and 3 elements on
    auto *h = static_cast<FifoHeader *>(base);
    h->head.store(h->head.load() + 1000 * kN + 3);
    // senders still get slots (before: "full" for ever), in order
    for (uint32_t i = 0; i < kN - 1; ++i) {
        REQUIRE(tx.reserve(&idx) != nullptr);
        CHECK(idx == i + 1);
        tx.commit(idx, uint8_t(i + 2), 0);
    }
    for (uint32_t i = 0; i < kN; ++i) {
        Fifo::Message m{};
        REQUIRE(rx.peek(&m));
        CHECK(m.am_id == i + 1);
        rx.release();
    }
}

TEST_CASE("fifo: corrupt length header is flagged, never read past the element", "[wire]") {
    auto mem = segment(2, 64);
    void *base = aligned(mem);
    Fifo::format(base, 2, 64, 1, 9, 0);
    Fifo tx(base, 0), rx(base, 0);
    uint64_t i;
    REQUIRE(tx.reserve(&i) != nullptr);
    tx.commit(i, 1, 1u << 30);
    Fifo::Message m{};
    REQUIRE(rx.peek(&m));
    CHECK(m.corrupt);
    CHECK(m.length == 0);
}

TEST_CASE("fifo header validation rejects garbage", "[wire]") {
    auto mem = segment(4, 64);
    void *base = aligned(mem);
    size_t size = Fifo::segment_size(4, 64);
    CHECK(Fifo::validate(base, size, 1) != nullptr);   // zeroes: bad magic
    Fifo::format(base, 4, 64, 1, 1, 0);
    CHECK(Fifo::validate(base, size, 1) == nullptr);
    CHECK(Fifo::validate(base, size, 2) != nullptr);   // other segment
    CHECK(Fifo::validate(base, size - 64, 1) != nullptr);  // truncated
    CHECK(Fifo::validate(base, 16, 1) != nullptr);
    static_cast<FifoHeader *>(base)->num_elems = 3;
    CHECK(Fifo::validate(base, size, 1) != nullptr);
}

TEST_CASE("fifo: a view keeps the validated shape when the header changes later",
          "[wire][security]") {
    auto mem = segment(4, 64);
    void *base = aligned(mem);
    const size_t size = Fifo::segment_size(4, 64);
    Fifo::format(base, 4, 64, 1, 42, 0);
    FifoShape shape;
    REQUIRE(Fifo::validate(base, size, 42, &shape) == nullptr);
    CHECK(shape.num_elems == 4);
    CHECK(shape.elem_size == 64);
    // the owner rewrites its header between the check and the view
    auto *h = static_cast<FifoHeader *>(base);
    h->num_elems = 1u << 20;
    h->elem_size = 1u << 20;
    Fifo tx(base, shape);
    CHECK(tx.max_payload() == 48);
    const auto *lo = static_cast<const uint8_t *>(base), *hi = lo + size;
    for (int i = 0; i < 4; ++i) {
        uint64_t idx;
        auto *p = static_cast<const uint8_t *>(tx.reserve(&idx));
        REQUIRE(p != nullptr);
        CHECK((p > lo && p + tx.max_payload() <= hi));
    }
    uint64_t idx;
    CHECK(tx.reserve(&idx) == nullptr); // full after the 4 validated elements
}

TEST_CASE("multi-producer stress keeps every message exactly once", "[wire]") {
    constexpr uint32_t kN = 64, kPerThread = 20000, kThreads = 3;
    auto mem = segment(kN, 64);
    void *base = aligned(mem);
    Fifo::format(base, kN, 64, 1, 3, 0);
    std::vector<std::thread> producers;
    for (uint32_t t = 0; t < kThreads; ++t) {
        producers.emplace_back([base, t] {
            Fifo tx(base, 0);
            for (uint32_t i = 0; i < kPerThread;) {
                uint64_t idx;
                void *p = tx.reserve(&idx);
                if (p == nullptr) {
                    std::this_thread::yield();
                    continue;
                }
                uint64_t v = (uint64_t(t) << 32) | i;
                std::memcpy(p, &v, sizeof(v));
                tx.commit(idx, uint8_t(t), sizeof(v));
                ++i;
            }
        });
    }
    Fifo rx(base, 0);
    std::vector<uint32_t> next(kThreads, 0);
    uint32_t got = 0;
    bool in_order = true;
    while (got < kThreads * kPerThread) {
        Fifo::Message m{};
        if (!rx.peek(&m)) continue;
        uint64_t v;
        std::memcpy(&v, m.data, sizeof(v));
        uint32_t t = uint32_t(v >> 32);
        if (t >= kThreads || m.am_id != t || uint32_t(v) != next[t]) in_order = false;
        else ++next[t];
        rx.release();
        ++got;
    }
    for (auto &p : producers) p.join();
    CHECK(in_order);
}

TEST_CASE("address validation", "[wire]") {
    std::string err;
    auto iface = ShmIface::open(ShmConfig{}, &err);
    REQUIRE(iface);
    ShmAddress a = iface->address();
    CHECK(ShmIface::check_address(&a, sizeof(a)) == nullptr);
    CHECK(ShmIface::check_address(&a, sizeof(a) - 1) != nullptr);  // truncated
    CHECK(ShmIface::check_address(nullptr, 0) != nullptr);
    ShmAddress bad = a;
    bad.magic ^= 1;
    CHECK(ShmIface::check_address(&bad, sizeof(bad)) != nullptr);
    bad = a;
    bad.pid = -5;
    CHECK(ShmIface::check_address(&bad, sizeof(bad)) != nullptr);
    // another gdrpipe version: refused, saying so with both versions
    bad = a;
    bad.version = uint16_t(kShmVersion - 1);
    const char *why = ShmIface::check_address(&bad, sizeof(bad));
    REQUIRE(why != nullptr);
    CHECK(std::string(why).find("different gdrpipe versions") != std::string::npos);
    CHECK(std::string(why).find("version " + std::to_string(kShmVersion - 1) + ", this process " +
                                std::to_string(kShmVersion)) != std::string::npos);
    CHECK(iface->connect(&bad, sizeof(bad), &err) == nullptr);
    CHECK(err == why);
    // a well-formed address of a segment that does not exist
    bad = a;
    bad.seg_id ^= 0x5555;
    CHECK(iface->connect(&bad, sizeof(bad), &err) == nullptr);
    CHECK_FALSE(err.empty());
    bad = a;
    bad.fd = 9999;
    CHECK(iface->connect(&bad, sizeof(bad), &err) == nullptr);
}

TEST_CASE("two processes exchange messages through the FIFO", "[wire]") {
    std::string err;
    auto parent = ShmIface::open(ShmConfig{16, 256}, &err);
    REQUIRE(parent);
    ShmAddress a = parent->address();
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // the child opens its own view through /proc/<ppid>/fd like a peer
        std::string e;
        auto child = ShmIface::open(ShmConfig{16, 256}, &e); // the same element size
        if (!child) _exit(2);
        ShmPeer *peer = child->connect(&a, sizeof(a), &e);
        if (peer == nullptr) _exit(3);
        for (uint32_t i = 0; i < 1000;) {
            uint64_t idx;
            void *p = peer->fifo().reserve(&idx);
            if (p == nullptr) continue;
            std::memcpy(p, &i, sizeof(i));
            peer->fifo().commit(idx, 7, sizeof(i));
            ++i;
        }
        child->release(peer);
        _exit(0);
    }
    uint32_t expect = 0;
    while (expect < 1000) {
        Fifo::Message m{};
        if (!parent->rx().peek(&m)) continue;
        uint32_t v;
        std::memcpy(&v, m.data, sizeof(v));
        REQUIRE(v == expect);
        parent->rx().release();
        ++expect;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("peer liveness follows the process", "[wire]") {
    std::string err;
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        auto child = ShmIface::open(ShmConfig{}, &err);
        ShmAddress a = child->address();
        if (write(pipefd[1], &a, sizeof(a)) != sizeof(a)) _exit(1);
        pause();
        _exit(0);
    }
    ShmAddress a{};
    REQUIRE(read(pipefd[0], &a, sizeof(a)) == sizeof(a));
    auto me = ShmIface::open(ShmConfig{}, &err);
    ShmPeer *peer = me->connect(&a, sizeof(a), &err);
    REQUIRE(peer != nullptr);
    CHECK(peer->alive());
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    CHECK_FALSE(peer->alive());
    me->release(peer);
    close(pipefd[0]);
    close(pipefd[1]);
}

TEST_CASE("cma moves scattered buffers", "[wire]") {
    REQUIRE(cma_available());
    std::vector<uint8_t> src(100000), a(30000), b(70000);
    for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7);
    struct iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    CHECK(cma_read(getpid(), iov, 2, reinterpret_cast<uint64_t>(src.data())) == 100000);
    CHECK(std::memcmp(a.data(), src.data(), a.size()) == 0);
    CHECK(std::memcmp(b.data(), src.data() + a.size(), b.size()) == 0);
    std::vector<uint8_t> dst(100000, 0);
    CHECK(cma_write(getpid(), iov, 2, reinterpret_cast<uint64_t>(dst.data())) == 100000);
    CHECK(dst == src);
    // an unmapped remote address is an error, not a crash
    CHECK(cma_read(getpid(), iov, 1, 8) < 0);
}

TEST_CASE("connect checks the owner's start time against the kernel's", "[wire][security]") {
    std::string err;
    auto rx = ShmIface::open(ShmConfig{16, 256}, &err);
    auto tx = ShmIface::open(ShmConfig{16, 256}, &err);
    auto tx2 = ShmIface::open(ShmConfig{16, 256}, &err);
    REQUIRE(rx);
    REQUIRE(tx);
    REQUIRE(tx2);
    ShmAddress a = rx->address();
    ShmPeer *peer = tx->connect(&a, sizeof(a), &err);
    REQUIRE(peer != nullptr);
    const uint64_t honest = process_start_time(getpid());
    REQUIRE(honest != 0);
    CHECK(peer->start_time() == honest);
    rx->rx().header()->owner_start_time = honest + 1; // any producer can write this
    CHECK(peer->start_time() == honest);
    CHECK(peer->alive());
    err.clear();
    CHECK(tx2->connect(&a, sizeof(a), &err) == nullptr);
    CHECK(err.find("start time") != std::string::npos);
    rx->rx().header()->owner_start_time = honest;
    ShmPeer *again = tx2->connect(&a, sizeof(a), &err);
    REQUIRE(again != nullptr);
    tx2->release(again);
    tx->release(peer);
}
