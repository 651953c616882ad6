// The RDMA wire's control messages (rdma/ctrl_msg.hpp) from a misbehaving
// remote peer: two engines on the fake fabric, a staged put from a to b
// optionally in flight, then the input's 48-byte messages delivered to one
// of them between progress rounds. Whatever arrives: no crash, no
// sanitizer report, the engines are destroyed cleanly.
//   byte 0: bit 0 = start the put first, bit 1 = deliver to b (else a)
//   then:   CtrlMsg after CtrlMsg (a short tail is delivered as it is)
#include "fuzz_target.hpp"

#include "gdrpipe/rdma/ctrl_msg.hpp"
#include "gdrpipe/rdma/fake_backend.hpp"
#include "gdrpipe/rdma/registration.hpp"
#include "gdrpipe/rdma/transfer.hpp"

#include <memory>

using namespace gdrpipe;
using namespace gdrpipe::rdma;
namespace td = gdrpipe::rdma::transfer_detail;

namespace {

// Host copies done at once (no threads): the run is the same every time.
class NowCopier final : public pipeline::ChunkCopier {
  public:
    cuda::Status start(const pipeline::LocalMem &m, std::size_t off, std::size_t n, char *slot,
                       bool to_slot, pipeline::CopyJob *) override {
        std::size_t seg_start = 0, done = 0;
        for (const auto &s : m.segs) {
            if (done == n) break;
            if (off + done < seg_start + s.len) {
                const std::size_t in = off + done - seg_start;
                const std::size_t k = std::min(s.len - in, n - done);
                if (to_slot) std::memcpy(slot + done, s.p + in, k);
                else std::memcpy(s.p + in, slot + done, k);
                done += k;
            }
            seg_start += s.len;
        }
        return {};
    }
    int poll(pipeline::CopyJob *, std::string *) override { return 1; }
    void wait(pipeline::CopyJob *) noexcept override {}
};

struct Side {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<Registrar> reg;
    std::unique_ptr<TransferEngine> eng;
};

bool make_side(FakeFabric &fab, Side &s) {
    s.be = fab.backend();
    auto ports = s.be->ports();
    if (ports.empty()) return false;
    auto ctx = s.be->open(ports[0]);
    if (!ctx) return false;
    s.ctx = std::move(ctx.value());
    auto pd = s.ctx->alloc_pd();
    if (!pd) return false;
    s.pd = std::move(pd.value());
    s.reg = std::make_unique<Registrar>(*s.pd, DeviceRegHooks{}, RegistrarConfig{});
    TransferConfig tc;
    tc.slot_size = 4096;
    tc.slots = 2;
    tc.direct_threshold = 1 << 20;
    tc.out_copier = std::make_shared<NowCopier>();
    tc.in_copier = std::make_shared<NowCopier>();
    auto eng = TransferEngine::create(*s.ctx, *s.pd, *s.reg, tc, [](int, const std::string &) {});
    if (!eng) return false;
    s.eng = std::move(eng.value());
    return true;
}

void progress(Side &a, Side &b, int rounds) {
    for (int i = 0; i < rounds; ++i) {
        if (a.eng->progress() + b.eng->progress() == 0 && i > 4) break;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size == 0) return 0;
    const bool put_first = data[0] & 1, to_b = data[0] & 2;
    std::vector<std::uint8_t> src(5 * 4096 + 7, 0x5a), dst(src.size(), 0);
    FakeConfig fc;
    fc.modeled_clock = true; // no wall-clock waits in the fabric
    FakeFabric fab(fc);
    Side a, b;
    if (!make_side(fab, a) || !make_side(fab, b)) return 0;
    if (a.eng->connect(b.eng->address()) != 0 || b.eng->connect(a.eng->address()) != 0) return 0;
    bool done = false;
    if (put_first) {
        auto key = b.eng->expose({dst.data(), dst.size()});
        if (key && a.eng->put({src.data(), src.size()}, key.value().addr, key.value(),
                              [&](int) { done = true; }, PathChoice::staged) == 0) {
            progress(a, b, 3);
        }
    }
    TransferEngine &target = to_b ? *b.eng : *a.eng;
    for (std::size_t off = 1; off < size; off += sizeof(td::CtrlMsg)) {
        const std::size_t n = std::min(sizeof(td::CtrlMsg), size - off);
        target.handle_peer_control({data + off, n});
        progress(a, b, 8);
    }
    progress(a, b, 200);
    (void)done;
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    auto msg = [](td::CtrlType t, std::uint32_t id, std::uint64_t addr, std::uint64_t len,
                  std::uint32_t imm) {
        td::CtrlMsg m;
        m.type = static_cast<std::uint32_t>(t);
        m.id = id;
        m.addr = addr;
        m.len = len;
        m.imm = imm;
        return fuzz_bytes_of(m);
    };
    const td::CtrlType types[] = {td::CtrlType::put_begin, td::CtrlType::get_req,
                                  td::CtrlType::credit,    td::CtrlType::nack,
                                  td::CtrlType::put_abort, td::CtrlType::write_flush,
                                  td::CtrlType::flush_ack};
    for (std::uint8_t flags = 0; flags < 4; ++flags) {
        for (td::CtrlType t : types) {
            FuzzBytes b{flags};
            const auto m = msg(t, 1, 0x10000, 8192, td::make_imm(false, 1, 0, 0));
            b.insert(b.end(), m.begin(), m.end());
            out.push_back(std::move(b));
        }
    }
    return out;
}
