// scan_preexisting(): finds the allocations made before the hooks were
// installed, by probing the address ranges of /proc/self/maps with
// cuPointerGetAttribute (see cuda_hooks.hpp).
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include "hook_internal.hpp"
#include "proc_maps.hpp"

#include <algorithm>
#include <cuda.h>
#include <sys/mman.h>
#include <utility>
#include <vector>

namespace gdrpipe::hooks {

int scan_preexisting(AllocationCallback cb, void *arg, const ScanOptions &opts)
{
    auto attr = reinterpret_cast<CUresult (*)(void *, CUpointer_attribute, CUdeviceptr)>(
        detail::pointer_attribute_fn());
    if (attr == nullptr) {
        return -1;
    }
    std::vector<detail::MapEntry> maps;
    if (!detail::read_proc_maps(maps)) {
        return 0;
    }
    const size_t chunk = size_t{2} << 20;
    const size_t fine = 512;
    const size_t step = opts.step < fine ? fine : opts.step;
    size_t probes = 0;
    int found = 0;
    // returns the end of the allocation containing p, or 0
    auto probe = [&](uintptr_t p) -> uintptr_t {
        ++probes;
        CUdeviceptr start = 0;
        size_t size = 0;
        if (attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) != CUDA_SUCCESS ||
            attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) != CUDA_SUCCESS || size == 0) {
            return 0;
        }
        unsigned int mt = 0;
        unsigned int managed = 0;
        attr(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
        attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p);
        int dev = -1;
        attr(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
        const MemKind kind = managed ? MemKind::managed
                             : mt == CU_MEMORYTYPE_HOST ? MemKind::host_pinned
                                                        : MemKind::device;
        cb(static_cast<uintptr_t>(start), size, kind, kind == MemKind::device ? dev : -1, arg);
        ++found;
        return static_cast<uintptr_t>(start + size);
    };
    // candidates: /dev/nvidia* mappings first, then the smaller regions first
    // (huge PROT_NONE regions such as sanitizer shadow memory would eat the
    // probe budget); regions above max_region_bytes are skipped
    std::vector<std::pair<bool, detail::MapEntry>> cand;
    for (auto &m : maps) {
        const bool nvidia = m.path.rfind("/dev/nvidia", 0) == 0;
        const bool reserved = m.prot == 0; // VA reservations (real driver and simulator)
        const bool anon = opts.include_anonymous && m.path.empty() && (m.prot & PROT_WRITE) != 0;
        if ((nvidia || reserved || anon) && m.end - m.start <= opts.max_region_bytes) {
            cand.emplace_back(nvidia, std::move(m));
        }
    }
    std::stable_sort(cand.begin(), cand.end(), [](const auto &a, const auto &b) {
        if (a.first != b.first) {
            return a.first;
        }
        return a.second.end - a.second.start < b.second.end - b.second.start;
    });
    for (const auto &[nv, m] : cand) {
        (void)nv;
        uintptr_t p = m.start;
        while (p < m.end && probes < opts.max_probes) {
            const uintptr_t end = probe(p);
            if (end > p) {
                // an allocation here: probe the rest of its 2 MiB chunk finely
                const uintptr_t chunk_end = (p & ~(chunk - 1)) + chunk;
                p = (end + fine - 1) & ~(fine - 1);
                while (p < chunk_end && p < m.end && probes < opts.max_probes) {
                    const uintptr_t e2 = probe(p);
                    p = e2 > p ? ((e2 + fine - 1) & ~(fine - 1)) : p + fine;
                }
                continue;
            }
            p = (p + step) & ~(step - 1);
        }
    }
    return found;
}

} // namespace gdrpipe::hooks
