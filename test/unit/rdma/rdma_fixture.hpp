// Shared fixture of the RDMA unit tests: two endpoints on one fake fabric,
// each with a registrar, a transfer engine and two chunk copiers (threads
// that run the chunk copies with a configurable delay, like CUDA streams).
#pragma once
#include <gdrpipe/rdma/fake_backend.hpp>
#include <gdrpipe/rdma/transfer.hpp>

#include "gp_catch.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace rdma_test {

using namespace gdrpipe::rdma;
using Clock = std::chrono::steady_clock;

// A serial asynchronous chunk copier (host memory): one job at a time on its
// own thread, each after `delay`, like a CUDA stream.
class Copier final : public gdrpipe::pipeline::ChunkCopier {
  public:
    explicit Copier(std::chrono::microseconds delay = std::chrono::microseconds(0))
        : delay_(delay), t_([this] { run(); }) {}
    ~Copier() override {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        t_.join();
    }
    gdrpipe::cuda::Status start(const gdrpipe::pipeline::LocalMem &m, std::size_t off,
                                std::size_t n, char *slot, bool to_slot,
                                gdrpipe::pipeline::CopyJob *job) override {
        Job j;
        std::size_t seg_start = 0, done = 0;
        for (const auto &s : m.segs) {
            if (done == n) break;
            if (off + done < seg_start + s.len) {
                const std::size_t in = off + done - seg_start;
                const std::size_t k = std::min(s.len - in, n - done);
                if (to_slot) j.pieces.push_back({s.p + in, slot + done, k});
                else j.pieces.push_back({slot + done, s.p + in, k});
                done += k;
            }
            seg_start += s.len;
        }
        std::lock_guard<std::mutex> g(mu_);
        j.ticket = job->ticket = ++next_ticket_;
        q_.push_back(std::move(j));
        cv_.notify_all();
        return {};
    }
    int poll(gdrpipe::pipeline::CopyJob *job, std::string *why) override {
        std::lock_guard<std::mutex> g(mu_);
        auto it = finished_.find(job->ticket);
        if (it == finished_.end()) return 0;
        const int st = it->second;
        finished_.erase(it);
        if (st != 0) *why = "injected copy failure";
        return st != 0 ? -1 : 1;
    }
    void wait(gdrpipe::pipeline::CopyJob *job) noexcept override {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return finished_.count(job->ticket) != 0; });
        finished_.erase(job->ticket);
    }
    void set_delay(std::chrono::microseconds d) { delay_us_.store(d.count()); }
    // Copiers given the same counters report how many of them were copying
    // at once (a job counts from the start of its delay to the end of its
    // copy): `peak` >= 2 shows stages that overlapped, whatever the machine's
    // speed. Set before the first job.
    void share_activity(std::atomic<int> *active, std::atomic<int> *peak) {
        active_ = active;
        peak_ = peak;
    }
    std::atomic<int> fail_next{0}; // this many copies fail...
    std::atomic<int> fail_skip{0}; // ...after this many more succeeded
    std::atomic<int> copies{0};

  private:
    struct Piece {
        const char *src;
        char *dst;
        std::size_t n;
    };
    struct Job {
        std::uint64_t ticket = 0;
        std::vector<Piece> pieces;
    };
    void run() {
        std::unique_lock<std::mutex> lk(mu_);
        for (;;) {
            cv_.wait(lk, [this] { return stop_ || !q_.empty(); });
            if (q_.empty()) {
                return; // stop requested and nothing left
            }
            Job j = std::move(q_.front());
            q_.pop_front();
            lk.unlock();
            if (active_ != nullptr) {
                const int now = active_->fetch_add(1) + 1;
                int seen = peak_->load();
                while (now > seen && !peak_->compare_exchange_weak(seen, now)) {
                }
            }
            const long long us = delay_us_.load();
            if (us > 0) {
                std::this_thread::sleep_for(std::chrono::microseconds(us));
            }
            int st = 0;
            if (fail_next.load() > 0 && fail_skip.load() > 0) {
                fail_skip.fetch_sub(1); // copied normally
                for (const Piece &p : j.pieces) std::memcpy(p.dst, p.src, p.n);
                copies.fetch_add(1);
            } else if (fail_next.load() > 0) {
                fail_next.fetch_sub(1);
                st = -EIO;
            } else {
                for (const Piece &p : j.pieces) std::memcpy(p.dst, p.src, p.n);
                copies.fetch_add(1);
            }
            if (active_ != nullptr) active_->fetch_sub(1);
            lk.lock();
            finished_[j.ticket] = st;
            cv_.notify_all();
        }
    }
    std::chrono::microseconds delay_;
    std::atomic<long long> delay_us_{delay_.count()};
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> q_;
    std::map<std::uint64_t, int> finished_;
    std::uint64_t next_ticket_ = 0;
    bool stop_ = false;
    std::atomic<int> *active_ = nullptr;
    std::atomic<int> *peak_ = nullptr;
    std::thread t_;
};

struct Side {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<Registrar> reg;
    std::shared_ptr<Copier> out = std::make_shared<Copier>();
    std::shared_ptr<Copier> in = std::make_shared<Copier>();
    std::unique_ptr<TransferEngine> eng;
    int conn_errors = 0;
};

struct Pair {
    explicit Pair(FakeConfig fc = {}, TransferConfig tc = small_config(),
                  DeviceRegHooks hooks = {}, RegistrarConfig rc = {})
        : fab(fc) {
        for (Side *s : {&a, &b}) {
            s->be = fab.backend();
            auto ports = s->be->ports();
            REQUIRE(!ports.empty());
            auto ctx = s->be->open(ports[0]);
            REQUIRE(ctx);
            s->ctx = std::move(ctx.value());
            auto pd = s->ctx->alloc_pd();
            REQUIRE(pd);
            s->pd = std::move(pd.value());
            s->reg = std::make_unique<Registrar>(*s->pd, hooks, rc);
            TransferConfig stc = tc;
            stc.out_copier = s->out;
            stc.in_copier = s->in;
            auto eng = TransferEngine::create(*s->ctx, *s->pd, *s->reg, stc,
                                              [s](int, const std::string &) { ++s->conn_errors; });
            REQUIRE(eng);
            s->eng = std::move(eng.value());
        }
        const auto aa = a.eng->address();
        const auto ba = b.eng->address();
        REQUIRE(a.eng->connect(ba) == 0);
        REQUIRE(b.eng->connect(aa) == 0);
    }

    static TransferConfig small_config() {
        TransferConfig tc;
        tc.slot_size = 16 * 1024;
        tc.slots = 4;
        tc.direct_threshold = 64 * 1024;
        return tc;
    }

    // Progresses both engines until pred() or the timeout; returns pred().
    bool run_until(const std::function<bool()> &pred, int timeout_ms = 10000) {
        const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
        while (!pred()) {
            if (Clock::now() > end) {
                return false;
            }
            const int n = a.eng->progress() + b.eng->progress();
            if (n == 0) {
                std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
        }
        return true;
    }
    bool drain(int timeout_ms = 10000) {
        return run_until([this] { return a.eng->idle() && b.eng->idle(); }, timeout_ms);
    }

    FakeFabric fab; // first: outlives both sides
    Side a, b;
};

inline std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> v(n);
    std::uint32_t x = seed * 2654435761u + 1;
    for (auto &b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<std::uint8_t>(x);
    }
    return v;
}

// One transfer's outcome.
struct Result {
    bool done = false;
    int status = 1;
    TransferEngine::Callback cb() {
        return [this](int st) {
            done = true;
            status = st;
        };
    }
};

} // namespace rdma_test
