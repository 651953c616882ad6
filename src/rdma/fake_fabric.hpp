// The fake RDMA fabric's state and its execution of posted operations
// (src/rdma/fake_backend.cc builds the verbs objects over it). Internal to
// the fake: include/gdrpipe/rdma/fake_backend.hpp is its interface.
// One mutex guards the whole fabric. In real time one worker thread executes
// the posted operations in post order per QP and delivers their completions;
// on a modeled clock the thread that calls Context::idle does.
#pragma once
#include <gdrpipe/rdma/fake_backend.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gdrpipe::rdma::fake_detail {

using Clock = std::chrono::steady_clock;

struct MrRec {
    std::uint64_t pd_id = 0;
    std::uint64_t iova = 0;
    std::size_t len = 0;
    std::uint8_t *host = nullptr;
    unsigned access = 0;
};

struct CqRec {
    std::deque<Completion> q;
};

struct RecvWr {
    std::uint64_t wr_id = 0;
    std::vector<Sge> sges;
};

struct QpRec {
    std::uint32_t qpn = 0;
    std::uint64_t pd_id = 0;
    std::shared_ptr<CqRec> scq, rcq;
    QpState state = QpState::reset;
    std::uint32_t remote_qpn = 0;
    Clock::time_point busy{};
    std::deque<RecvWr> recvs;
    std::uint32_t sq_outstanding = 0;
    QpCaps caps;
};

enum class OpKind { write, read, send };

struct Op {
    std::uint32_t qpn = 0;
    OpKind kind = OpKind::write;
    std::uint64_t wr_id = 0;
    std::vector<Sge> sges;
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    std::optional<std::uint32_t> imm;
    bool signaled = true;
    bool is_inline = false;
    std::vector<std::uint8_t> inline_data;
    Clock::time_point due{};
};

enum class Exec { done, stall };

struct Fabric {
    explicit Fabric(FakeConfig c) : cfg(c) {}

    FakeConfig cfg;
    mutable std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::thread worker;

    std::unordered_map<std::uint32_t, MrRec> mrs;
    std::unordered_map<std::uint32_t, std::shared_ptr<QpRec>> qps;
    std::deque<Op> ops;
    std::vector<std::pair<std::uintptr_t, std::size_t>> device_mem;
    std::unordered_map<int, std::pair<std::uint8_t *, std::size_t>> dmabufs;
    int next_fd = 1 << 20;
    std::uint32_t next_qpn = 0x100;
    std::uint32_t next_key = 1;
    std::uint64_t next_pd = 1;
    int fail_regs = 0;
    int fail_err = 0;
    FakeStats st;
    Clock::time_point vnow{}; // the clock when cfg.modeled_clock

    // ---- everything below runs with mu held
    static void push(CqRec *cq, const Completion &c);
    void set_error(QpRec &q);
    bool overlaps_device_mem(std::uintptr_t a, std::size_t len) const;
    // Pre-registration checks shared by both registration kinds.
    int reg_precheck();
    std::uint32_t add_mr(const MrRec &rec);
    static std::uint8_t *translate(const MrRec &mr, std::uint64_t addr, std::size_t len);
    // Resolves local SGEs of QP `q` to host pointers; false on a bad SGE.
    bool resolve_local(const QpRec &q, const std::vector<Sge> &sges, bool need_write,
                       std::vector<std::pair<std::uint8_t *, std::size_t>> &out);
    std::uint8_t *resolve_remote(const QpRec &peer, std::uint32_t rkey, std::uint64_t addr,
                                 std::size_t len, unsigned need);
    void complete_req(QpRec &q, const Op &op, WcStatus status, WcOpcode opc, std::uint32_t len);
    Exec fail(QpRec &q, const Op &op, WcStatus status, WcOpcode opc);
    Exec execute(QpRec &q, const Op &op);
    // Executes, in post order per QP, every operation due at `now`; returns
    // whether any ran and leaves in `next` the earliest due time still ahead.
    bool sweep(Clock::time_point now, std::optional<Clock::time_point> &next);
    // Real time: the worker thread executes each operation when it is due.
    void run();
    // Modeled time: the caller waits for a completion. Whatever is due now
    // runs; if nothing is, the clock moves to the next due operation and
    // everything due then runs. Deterministic: no thread, no host time.
    void idle();
    Clock::time_point now() const { return cfg.modeled_clock ? vnow : Clock::now(); }
};

} // namespace gdrpipe::rdma::fake_detail
