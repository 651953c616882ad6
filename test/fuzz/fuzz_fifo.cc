// A peer's wire FIFO segment (wire::Fifo): the header any mapper can write,
// then the consumer's and a producer's view of the elements. The input is
// the whole segment; validate() decides whether it is used; if it is, no
// element the consumer returns and no slot a producer reserves may reach
// outside the segment.
#include "fuzz_target.hpp"

#include "gdrpipe/wire/shm_fifo.hpp"

#include <cstdlib>
#include <memory>

using namespace gdrpipe::wire;

namespace {
constexpr std::size_t kMaxSegment = 1 << 16;
struct Free {
    void operator()(void *p) const { std::free(p); }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < sizeof(FifoHeader) || size > kMaxSegment) return 0;
    const std::size_t mapped = (size + 63) / 64 * 64;
    std::unique_ptr<std::uint8_t, Free> seg(static_cast<std::uint8_t *>(std::aligned_alloc(64, mapped)));
    std::memset(seg.get(), 0, mapped);
    std::memcpy(seg.get(), data, size);
    FifoHeader h;
    std::memcpy(static_cast<void *>(&h), seg.get(), sizeof(h));
    FifoShape shape;
    if (Fifo::validate(seg.get(), mapped, h.seg_id, &shape) != nullptr) return 0;
    GP_FUZZ_ASSERT(Fifo::segment_size(shape.num_elems, shape.elem_size) <= mapped);
    const std::uint8_t *lo = seg.get(), *hi = seg.get() + mapped;
    {
        // (peek() checks a claiming producer's pid only after many polls of
        // one element: not reached here, kill(pid, 0) sends nothing anyway)
        Fifo consumer(seg.get(), shape);
        for (unsigned i = 0; i < 2 * shape.num_elems + 2; ++i) {
            Fifo::Message m;
            if (!consumer.peek(&m)) break;
            if (!m.corrupt) {
                const auto *p = static_cast<const std::uint8_t *>(m.data);
                GP_FUZZ_ASSERT(p >= lo && p + m.length <= hi);
            }
            consumer.release();
        }
    }
    Fifo producer(seg.get(), shape);
    for (unsigned i = 0; i < 4; ++i) {
        std::uint64_t idx = 0;
        void *p = producer.reserve(&idx);
        if (p == nullptr) break;
        auto *b = static_cast<std::uint8_t *>(p);
        GP_FUZZ_ASSERT(b >= lo && b + producer.max_payload() <= hi);
        std::memset(p, 0xa5, producer.max_payload());
        producer.commit(idx, 1, producer.max_payload());
    }
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    for (std::uint32_t n : {2u, 8u}) {
        for (std::uint32_t e : {32u, 128u}) {
            const std::size_t sz = Fifo::segment_size(n, e);
            std::unique_ptr<std::uint8_t, Free> seg(static_cast<std::uint8_t *>(std::aligned_alloc(64, (sz + 63) / 64 * 64)));
            std::memset(seg.get(), 0, sz);
            Fifo::format(seg.get(), n, e, 1234, 0xfeedull + n + e, 99);
            Fifo f(seg.get(), sz);
            for (std::uint32_t i = 0; i < n / 2; ++i) { // a few messages waiting
                std::uint64_t idx = 0;
                void *p = f.reserve(&idx);
                std::memset(p, int(i), 8);
                f.commit(idx, std::uint8_t(i), 8);
            }
            if (e == 128u) { // and one claimed, never committed
                std::uint64_t idx = 0;
                f.reserve(&idx);
            }
            out.emplace_back(seg.get(), seg.get() + sz);
        }
    }
    return out;
}
