// Test double for RegionOps: records every pin/unpin and checks that a region
// is never unpinned while the test still uses it.
#pragma once
#include <gdrpipe/cache/region_cache.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gdrpipe::cache::test {

struct Pinned {
    RegionInfo info;
    int id = 0;
    std::atomic<bool> pinned{true};
    std::atomic<int> users{0};  // handles the test currently holds
    std::atomic<int> unpin_calls{0};
};

class FakePinner {
  public:
    std::atomic<int> pin_calls{0};
    std::atomic<int> unpin_calls{0};
    std::atomic<int> violations{0};  // unpinned while used, or twice
    std::atomic<int> fail_pins{0};   // fail the next N pin calls
    std::atomic<bool> invalid_all{false}; // validate() returns false
    std::function<void(const RegionInfo &)> on_pin;   // runs inside pin()
    std::function<void(const RegionInfo &)> on_unpin; // runs inside unpin()

    RegionOps ops(bool with_validate = false) {
        RegionOps o;
        o.pin = [this](const RegionInfo &info) -> Result<Payload> {
            if (on_pin) {
                on_pin(info);
            }
            if (fail_pins.load() > 0) {
                fail_pins.fetch_sub(1);
                return make_cache_error(42, "injected pin failure");
            }
            auto p = std::make_shared<Pinned>();
            p->info = info;
            p->id = ++pin_calls;
            std::lock_guard<std::mutex> lk(mu_);
            all_.push_back(p);
            return Payload(p);
        };
        o.unpin = [this](const RegionInfo &info, Payload &&payload) {
            auto *p = static_cast<Pinned *>(payload.get());
            if (p->users.load() != 0 || !p->pinned.exchange(false) ||
                p->info.addr != info.addr || p->info.len != info.len) {
                ++violations;
            }
            ++p->unpin_calls;
            ++unpin_calls;
            if (on_unpin) {
                on_unpin(info);
            }
        };
        if (with_validate) {
            o.validate = [this](const RegionInfo &, const Payload &) {
                return !invalid_all.load();
            };
        }
        return o;
    }

    // every payload ever pinned
    std::vector<std::shared_ptr<Pinned>> all() {
        std::lock_guard<std::mutex> lk(mu_);
        return all_;
    }
    int still_pinned() {
        int n = 0;
        for (auto &p : all()) {
            n += p->pinned.load() ? 1 : 0;
        }
        return n;
    }

  private:
    std::mutex mu_;
    std::vector<std::shared_ptr<Pinned>> all_;
};

inline Pinned *pinned_of(const RegionRef &r) { return r.payload_as<Pinned>(); }

} // namespace gdrpipe::cache::test
