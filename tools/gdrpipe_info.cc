// gdrpipe-info: what gdrpipe sees on this machine -- CUDA driver, devices,
// peer access, interception hooks. `--cuda-available` only sets the exit
// status (0 when CUDA device memory can be used).
#include "gdrpipe/capi.h"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
    bool quiet = argc > 1 && std::strcmp(argv[1], "--cuda-available") == 0;
    if (argc > 1 && !quiet) {
        std::printf("usage: gdrpipe-info [--cuda-available]\n");
        return 2;
    }
    char why[1024] = "";
    int hooks = gp_hooks_install(why, sizeof(why));
    int cuda = gp_cuda_available();
    if (quiet) return (cuda && gp_cuda_device_count() > 0) ? 0 : 1;

    auto &drv = gdrpipe::cuda::driver();
    std::printf("gdrpipe %s\n", GP_VERSION);
    std::printf("cuda driver library : %s\n", drv.library_path().c_str());
    if (!cuda) {
        std::printf("cuda                : off (%s)\n", gp_cuda_why_not());
    } else {
        auto &dm = gdrpipe::cuda::devices();
        int n = dm.count();
        std::printf("cuda                : driver %d, %d device(s)\n", drv.version(), n);
        for (int i = 0; i < n; ++i) {
            const auto *p = dm.props(i);
            std::printf("  device %d: %s, cc %d.%d, pci %s\n", i, p->name.c_str(),
                        p->cc_major, p->cc_minor, p->pci_bus_id.c_str());
        }
        for (int i = 0; i < n; ++i) {
            std::printf("  peer access %d ->", i);
            for (int j = 0; j < n; ++j) {
                std::printf(" %s", i == j ? "-" : (dm.can_access_peer(i, j) ? "yes" : "no"));
            }
            std::printf("\n");
        }
    }
    std::printf("free/alloc hooks    : %s%s%s\n",
                hooks > 0 ? "installed" : hooks == 0 ? "none (no driver)" : "INCOMPLETE",
                why[0] ? " -- " : "", hooks > 0 ? "" : why);
    return 0;
}
