// Immutable search structure the lock-free hit path reads: a copy of the
// index made at every change (src/cache/region_index.cc, Core::commit).
//
// Built for the read side: a directory of the spaces present (usually one or
// a few: the local process, one per peer) and, per space, a sorted array of
// 8-byte start addresses with a parallel array of region pointers. Half the
// bytes of the master index's 128-bit keys (1000 regions: 8 KiB of keys, L1
// resident) and a 64-bit compare per step of the branchless search.
#pragma once
#include "flat_index.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gdrpipe::cache::detail {

// T must expose info.space / info.addr / info.end().
template <class T> class SortedSnapshot {
  public:
    explicit SortedSnapshot(const FlatIndex<T> &index) {
        const std::size_t n = index.size();
        // no zero-fill: every element is written below
        addrs_ = std::make_unique_for_overwrite<std::uintptr_t[]>(n);
        vals_ = std::make_unique_for_overwrite<T *[]>(n);
        index.copy_to(vals_.get(), addrs_.get());
        for (std::size_t i = 0; i < n;) {
            const SpaceId space = index.space_at(i);
            const std::size_t end = index.end_of_space(space);
            spaces_.push_back(Run{space, i, end});
            i = end;
        }
    }

    // the region of `space` covering [a, b), or nullptr
    T *find_covering(SpaceId space, std::uintptr_t a, std::uintptr_t b) const noexcept {
        const Run *run = find_space(space);
        if (run == nullptr) {
            return nullptr;
        }
        const std::uintptr_t *base = addrs_.get() + run->first;
        std::size_t n = run->last - run->first;
        // branchless (a mispredicted branch per level costs more than the
        // search; a linear pass over the last 16 entries measured slower)
        while (n > 1) {
            const std::size_t half = n / 2;
            base = base[half] <= a ? base + half : base;
            n -= half;
        }
        if (*base > a) {
            return nullptr;
        }
        T *r = vals_[static_cast<std::size_t>(base - addrs_.get())];
        return r->info.end() >= b ? r : nullptr;
    }

  private:
    struct Run {
        SpaceId space;
        std::size_t first, last; // [first, last) in addrs_ / vals_
    };

    const Run *find_space(SpaceId space) const noexcept {
        // few spaces: a linear scan beats a search
        for (const Run &r : spaces_) {
            if (r.space == space) {
                return &r;
            }
        }
        return nullptr;
    }

    std::vector<Run> spaces_;
    std::unique_ptr<std::uintptr_t[]> addrs_;
    std::unique_ptr<T *[]> vals_;
};

} // namespace gdrpipe::cache::detail
