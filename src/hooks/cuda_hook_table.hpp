// The table of hooked CUDA entry points (cuda_hook_table.cc), shared by the
// hooks (cuda_hook_templates.hpp) and the installer (cuda_hooks.cc).
//
// Every hooked entry point belongs to a "group" (one driver prototype, e.g.
// cuMemFree_v2). A group has kSlots hook functions (template instances); each
// distinct entry address of that prototype (the dlsym'd export, the _ptsz
// export, another address cuGetProcAddress hands out) gets one slot, whose
// hook calls that entry's own trampoline from g_orig[group][slot].
#pragma once
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include <atomic>
#include <cstdint>

namespace gdrpipe::hooks::detail {

enum Group : int {
    kAllocV2, kAllocV1, kPitchV2, kPitchV1, kManaged, kFreeV2, kFreeV1,
    kAllocHostV2, kAllocHostV1, kHostAlloc, kFreeHost, kHostRegV2, kHostRegV1, kHostUnreg,
    kAllocAsync, kFreeAsync, kAllocPool, kPoolTrim, kPoolDestroy,
    kMap, kUnmap, kRelease, kAddrFree,
    kGroups
};
constexpr int kSlots = 4;

// The trampolines of the patched entries (written by install(), read by the
// hooks). constinit: install() may run from a constructor before main.
extern constinit std::atomic<void *> g_orig[kGroups][kSlots];

// Which install() option a group depends on.
enum OptionClass : uint8_t { kOptFree, kOptAlloc, kOptHostFree, kOptHostAlloc, kOptAsyncFree,
                             kOptAsyncAlloc, kOptVmmFree, kOptVmmAlloc };

struct GroupDesc {
    const char *names[2]; // exports looked up with dlsym
    const char *gpa_name; // base name for cuGetProcAddress (null: none)
    OptionClass opt;
    void *hooks[kSlots];
};

// The kGroups entries, indexed by Group.
const GroupDesc *groups();

// Whether `opts` asks for the groups of option class `c`.
bool wanted(OptionClass c, const Options &opts);

} // namespace gdrpipe::hooks::detail
