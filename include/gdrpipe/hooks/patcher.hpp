// In-place code patching of x86-64 functions ("detours").
//
// Why our own patcher: the CUDA runtime resolves driver entry points through
// cuGetProcAddress and calls them through plain function pointers, so only
// patching the *code* of the driver's functions catches every call. UCX's
// ucm_bistro_patch (exported by Debian's libucm 1.13) cannot be used: it cannot
// relocate `sub $imm8,%rsp` (the prologue of driver R575+), knows nothing of
// endbr64, and when the hook is more than 2 GB away it writes a 13-byte
// `movabs $hook,%rax; jmp *%rax`, which overwrites (and would have to
// relocate) the RIP-relative `cmpl` that follows in every driver prologue.
//
// What patch_function does:
//  1. decodes the first whole instructions of the target covering >= 5 bytes
//     (after a leading endbr64, which stays in place so indirect-branch
//     tracking keeps working);
//  2. allocates one executable stub page within +-2 GB of the target holding
//     (a) `jmp *0(%rip)` + the hook's 8-byte address and (b) the trampoline:
//     [endbr64] + the relocated instructions (RIP-relative displacements and
//     rel32 branches re-targeted, rel8 jcc/jmp widened to rel32) + a jump back
//     to the first instruction that was not relocated;
//  3. writes `e9 rel32` (jump to the stub) over the first 5 bytes.
// It refuses (and changes nothing) on an unknown instruction, a `ret` or an
// unconditional jump before 5 bytes are covered, a branch back into the bytes
// being replaced, or a displacement that does not fit the stub's location.
// Limits: a branch from *later* in the function into the replaced bytes
// cannot be detected (compilers do not emit one into a prologue).
//
// Atomicity of the 5-byte write (concurrent callers of the target):
//  - if the 5 bytes lie within one aligned 8-byte word: one aligned 8-byte
//    store (the other 3 bytes rewritten unchanged): atomic on x86-64;
//  - else if they lie within one aligned 16-byte block: lock cmpxchg16b;
//  - else bytes 1..4 are written first and the opcode byte last.
// Even an atomic store does not make patching a function that another thread
// is executing safe: that thread may be between two of the relocated
// instructions (after `push %rbp`) and then fetch the middle of the jump.
// Patch before other threads run: gdrpipe does it from its constructor,
// before the application starts threads or touches CUDA.
// The text page is made RWX for the write when the kernel allows it (so other
// threads executing the same page keep running); under a W^X policy it falls
// back to RW, then the original protection (read from /proc/self/maps) is
// restored.  Stub pages are never unmapped (a thread may still be inside a
// trampoline after unpatch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gdrpipe::hooks {

inline constexpr size_t kJumpPatchSize = 5;

struct Patch {
    void *target = nullptr;     // function entry that was patched
    void *site = nullptr;       // where the 5-byte jump is (target, or target+4 after endbr64)
    void *trampoline = nullptr; // call this to run the original function
    void *stub = nullptr;       // the stub page (jump to hook + trampoline)
    const void *hook = nullptr;
    uint8_t saved[kJumpPatchSize] = {};
    size_t relocated = 0;       // bytes of original instructions moved into the trampoline
    bool applied = false;
};

// Copies the whole instructions at `src` (which lives at address src_addr)
// covering at least `min_bytes` into `dst` (which will live at dst_addr),
// re-targeting relative fields, then appends a jump back to
// src_addr + consumed. Fails (with `error`) as described above.
struct Relocation {
    size_t consumed = 0; // bytes of original code relocated
    size_t emitted = 0;  // bytes written to dst (jump back included)
};
bool relocate_prologue(const uint8_t *src, size_t src_avail, uintptr_t src_addr,
                       size_t min_bytes, uint8_t *dst, size_t dst_cap, uintptr_t dst_addr,
                       Relocation &out, std::string &error);

// Two phases so that the caller can publish p.trampoline before the target
// starts jumping to the hook: prepare_patch builds the stub (the target is not
// touched); apply_patch writes the jump.
bool prepare_patch(void *target, const void *hook, Patch &p, std::string &error);
bool apply_patch(Patch &p, std::string &error);
inline bool patch_function(void *target, const void *hook, Patch &p, std::string &error)
{
    return prepare_patch(target, hook, p, error) && apply_patch(p, error);
}
// Restores the saved bytes. The stub stays mapped.
bool unpatch_function(Patch &p, std::string &error);

// Allocates `size` bytes (rounded up to pages) of RW memory within +-2 GB
// minus `slack` of `near`; returns nullptr when none is free.
void *alloc_near(uintptr_t near, size_t size, size_t slack);

} // namespace gdrpipe::hooks
