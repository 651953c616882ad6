// Patcher tests on real functions of this binary. The functions are written in
// assembly so their prologues do not depend on the compiler or its flags.
#include "gdrpipe/hooks/patcher.hpp"

#include <atomic>
#include "gp_catch.hpp"
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
int gp_t_driver_like(int a, int b); // a+b, or -1 when gp_t_flag == 0x12345678
int gp_t_endbr(int a, int b);       // a+2b
int gp_t_riplea(int a, int b);      // gp_t_table[0]+a+b
int gp_t_jcc8(int a, int b);        // a ? a+b : -1
int gp_t_call(int a, int b);        // 2a+b, via a call in the first instruction
int gp_t_unaligned(int a, int b);   // a-b, entry at 12 mod 16
int gp_t_loop(int a, int b);        // branch back into its first 5 bytes
int gp_t_short(int a, int b);       // mov; ret
extern int gp_t_flag;
}

__asm__(R"(
    .text
    .p2align 4
    .globl gp_t_driver_like
    .hidden gp_t_driver_like
    .type gp_t_driver_like,@function
gp_t_driver_like:
    push %rbp
    mov %rsp,%rbp
    push %r12
    sub $8,%rsp
    cmpl $0x12345678, gp_t_flag(%rip)
    je 1f
    lea (%rdi,%rsi),%eax
    add $8,%rsp
    pop %r12
    pop %rbp
    ret
1:  mov $-1,%eax
    add $8,%rsp
    pop %r12
    pop %rbp
    ret
    .size gp_t_driver_like, .-gp_t_driver_like

    .p2align 4
    .globl gp_t_endbr
    .hidden gp_t_endbr
    .type gp_t_endbr,@function
gp_t_endbr:
    endbr64
    push %rbp
    mov %rsp,%rbp
    lea (%rdi,%rsi,2),%eax
    pop %rbp
    ret
    .size gp_t_endbr, .-gp_t_endbr

    .p2align 4
    .globl gp_t_riplea
    .hidden gp_t_riplea
    .type gp_t_riplea,@function
gp_t_riplea:
    lea gp_t_table(%rip),%rax
    mov (%rax),%eax
    add %edi,%eax
    add %esi,%eax
    ret
    .size gp_t_riplea, .-gp_t_riplea

    .p2align 4
    .globl gp_t_jcc8
    .hidden gp_t_jcc8
    .type gp_t_jcc8,@function
gp_t_jcc8:
    test %edi,%edi
    je 1f
    lea (%rdi,%rsi),%eax
    ret
1:  mov $-1,%eax
    ret
    .size gp_t_jcc8, .-gp_t_jcc8

    .p2align 4
gp_t_helper:
    lea (%rdi,%rdi),%eax
    ret

    .p2align 4
    .globl gp_t_call
    .hidden gp_t_call
    .type gp_t_call,@function
gp_t_call:
    call gp_t_helper
    add %esi,%eax
    ret
    .size gp_t_call, .-gp_t_call

    .p2align 4
    .skip 12, 0xcc
    .globl gp_t_unaligned
    .hidden gp_t_unaligned
    .type gp_t_unaligned,@function
gp_t_unaligned:
    push %rbp
    mov %rsp,%rbp
    mov %edi,%eax
    sub %esi,%eax
    pop %rbp
    ret
    .size gp_t_unaligned, .-gp_t_unaligned

    .p2align 4
    .globl gp_t_loop
    .hidden gp_t_loop
    .type gp_t_loop,@function
gp_t_loop:
1:  sub $1,%edi
    jg 1b
    mov %edi,%eax
    ret
    .size gp_t_loop, .-gp_t_loop

    .p2align 4
    .globl gp_t_short
    .hidden gp_t_short
    .type gp_t_short,@function
gp_t_short:
    mov %edi,%eax
    ret
    .size gp_t_short, .-gp_t_short
    .p2align 4

    .data
    .p2align 2
    .globl gp_t_flag
    .hidden gp_t_flag
gp_t_flag:
    .long 0
gp_t_table:
    .long 100
    .text
)");

namespace {

using Fn = int (*)(int, int);

std::atomic<int> g_hook_calls{0};
std::atomic<Fn> g_orig{nullptr};

int hook_add_1000(int a, int b)
{
    g_hook_calls.fetch_add(1);
    return g_orig.load()(a, b) + 1000;
}

// calls through a volatile pointer so the compiler cannot assume anything
int call(Fn f, int a, int b)
{
    Fn volatile vf = f;
    return vf(a, b);
}

void check_patch_cycle(Fn f, int a, int b, int expected)
{
    using namespace gdrpipe::hooks;
    REQUIRE(call(f, a, b) == expected);
    uint8_t before[16];
    std::memcpy(before, reinterpret_cast<void *>(f), sizeof(before));

    Patch p;
    std::string err;
    REQUIRE(prepare_patch(reinterpret_cast<void *>(f), reinterpret_cast<void *>(&hook_add_1000), p,
                          err));
    INFO(err);
    g_orig = reinterpret_cast<Fn>(p.trampoline);
    // prepared but not applied: the target is untouched
    CHECK(std::memcmp(before, reinterpret_cast<void *>(f), sizeof(before)) == 0);
    REQUIRE(apply_patch(p, err));
    CHECK(std::memcmp(before, reinterpret_cast<void *>(f), sizeof(before)) != 0);

    const int calls0 = g_hook_calls.load();
    CHECK(call(f, a, b) == expected + 1000);
    CHECK(g_hook_calls.load() == calls0 + 1);
    // the trampoline alone runs the original
    CHECK(call(reinterpret_cast<Fn>(p.trampoline), a, b) == expected);
    CHECK(g_hook_calls.load() == calls0 + 1);

    REQUIRE(unpatch_function(p, err));
    CHECK(std::memcmp(before, reinterpret_cast<void *>(f), sizeof(before)) == 0);
    CHECK(call(f, a, b) == expected);
    CHECK(g_hook_calls.load() == calls0 + 1);
    // the trampoline stays usable after unpatch
    CHECK(call(reinterpret_cast<Fn>(p.trampoline), a, b) == expected);
}

} // namespace

TEST_CASE("patch: driver-like prologue with RIP-relative cmp", "[hooks][patcher]")
{
    check_patch_cycle(&gp_t_driver_like, 2, 3, 5);
    // the branch after the relocated bytes still sees the flag
    gp_t_flag = 0x12345678;
    check_patch_cycle(&gp_t_driver_like, 2, 3, -1);
    gp_t_flag = 0;
}

TEST_CASE("patch: endbr64 stays at the entry", "[hooks][patcher]")
{
    const auto *entry = reinterpret_cast<const uint8_t *>(&gp_t_endbr);
    gdrpipe::hooks::Patch p;
    std::string err;
    REQUIRE(gdrpipe::hooks::prepare_patch(reinterpret_cast<void *>(&gp_t_endbr),
                                          reinterpret_cast<void *>(&hook_add_1000), p, err));
    CHECK(p.site == entry + 4);
    CHECK(std::memcmp(p.trampoline, "\xf3\x0f\x1e\xfa", 4) == 0);
    check_patch_cycle(&gp_t_endbr, 4, 5, 14);
    CHECK(std::memcmp(entry, "\xf3\x0f\x1e\xfa", 4) == 0);
}

TEST_CASE("patch: RIP-relative lea, jcc rel8, call rel32, unaligned entry", "[hooks][patcher]")
{
    check_patch_cycle(&gp_t_riplea, 1, 2, 103);
    check_patch_cycle(&gp_t_jcc8, 7, 8, 15);
    check_patch_cycle(&gp_t_jcc8, 0, 8, -1); // the widened je is taken in the trampoline
    check_patch_cycle(&gp_t_call, 10, 1, 21);
    REQUIRE(reinterpret_cast<uintptr_t>(&gp_t_unaligned) % 16 == 12);
    check_patch_cycle(&gp_t_unaligned, 10, 4, 6);
}

TEST_CASE("patch: refused functions are left untouched", "[hooks][patcher]")
{
    for (Fn f : {&gp_t_loop, &gp_t_short}) {
        uint8_t before[8];
        std::memcpy(before, reinterpret_cast<void *>(f), sizeof(before));
        gdrpipe::hooks::Patch p;
        std::string err;
        CHECK_FALSE(gdrpipe::hooks::patch_function(reinterpret_cast<void *>(f),
                                                   reinterpret_cast<void *>(&hook_add_1000), p, err));
        CHECK_FALSE(err.empty());
        CHECK(std::memcmp(before, reinterpret_cast<void *>(f), sizeof(before)) == 0);
    }
    CHECK(call(&gp_t_short, 9, 0) == 9);
}

// No test patches a function while other threads execute it: a thread can be
// inside the first five bytes (after `push %rbp`, before `mov %rsp,%rbp`)
// when the jump lands and then fetches the middle of the jump. That is why
// gdrpipe installs its hooks from a constructor, before the application
// starts threads or touches CUDA (see patcher.hpp).

