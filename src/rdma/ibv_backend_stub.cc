// Stand-in for the libibverbs backend when the build has no libibverbs:
// it reports no RDMA devices.
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/verbs.hpp>

#include <cerrno>

namespace gdrpipe::rdma {

namespace {
class NoIbvBackend final : public Backend {
  public:
    const char *name() const noexcept override { return "ibv (not built)"; }
    std::vector<PortInfo> ports() override {
        GP_INFO("rdma: no RDMA devices (built without libibverbs)");
        return {};
    }
    Expected<std::unique_ptr<Context>> open(const PortInfo &port) override {
        return make_error(-ENODEV, "built without libibverbs: no " + port.name);
    }
};
} // namespace

std::unique_ptr<Backend> make_ibv_backend() { return std::make_unique<NoIbvBackend>(); }
bool ibv_backend_available() noexcept { return false; }

} // namespace gdrpipe::rdma
