// Decoder and relocator tests on byte strings (no code is executed here).
#include "gdrpipe/hooks/patcher.hpp"
#include "gdrpipe/hooks/x86_decode.hpp"

#include "gp_catch.hpp"
#include <cstring>
#include <vector>

using gdrpipe::hooks::Relocation;
using gdrpipe::hooks::relocate_prologue;
using namespace gdrpipe::hooks::x86;

namespace {

// lengths of consecutive instructions in `bytes`
std::vector<int> lengths(const std::vector<uint8_t> &bytes)
{
    std::vector<int> out;
    size_t at = 0;
    while (at < bytes.size()) {
        Insn in;
        const char *why = nullptr;
        if (!decode(bytes.data() + at, bytes.size() - at, in, &why)) {
            out.push_back(-1);
            break;
        }
        out.push_back(in.length);
        at += in.length;
    }
    return out;
}

int32_t i32_at(const uint8_t *p)
{
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

} // namespace

TEST_CASE("decode: driver 580 entry prologue", "[hooks][x86]")
{
    // push %rbp; mov %rsp,%rbp; push %r12; sub $8,%rsp; cmpl $imm32,disp32(%rip); je rel32
    const std::vector<uint8_t> b = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x54, 0x48, 0x83, 0xec, 0x08,
                                    0x81, 0x3d, 0x10, 0x20, 0x30, 0x00, 0x78, 0x56, 0x34, 0x12,
                                    0x0f, 0x84, 0x00, 0x01, 0x00, 0x00};
    CHECK(lengths(b) == std::vector<int>{1, 3, 2, 4, 10, 6});
    Insn cmp;
    REQUIRE(decode(b.data() + 10, b.size() - 10, cmp));
    CHECK(cmp.rip_relative);
    CHECK(cmp.disp_offset == 2);
    CHECK(cmp.rel == 0x00302010);
    CHECK(cmp.target(0x1000) == 0x1000 + 10 + 0x00302010);
    Insn je;
    REQUIRE(decode(b.data() + 20, b.size() - 20, je));
    CHECK(je.flow == Flow::jcc);
    CHECK(je.cond == 4);
    CHECK(je.rel_size == 4);
    CHECK(je.rel == 0x100);
    // cuIpcOpenMemHandle_v2 variant: jbe rel32
    const uint8_t jbe[] = {0x0f, 0x86, 0xfc, 0xff, 0xff, 0xff};
    REQUIRE(decode(jbe, sizeof(jbe), je));
    CHECK(je.cond == 6);
    CHECK(je.rel == -4);
}

TEST_CASE("decode: gcc -O0 / -O2 prologues and endbr64", "[hooks][x86]")
{
    // endbr64; push %rbp; mov %rsp,%rbp; mov %edi,-0x14(%rbp); mov %rsi,-0x20(%rbp)
    CHECK(lengths({0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xec, 0x48, 0x89,
                   0x75, 0xe0}) == std::vector<int>{4, 1, 3, 3, 4});
    Insn in;
    const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
    REQUIRE(decode(endbr, 4, in));
    CHECK(in.endbr64);
    // -O2: push %r15; push %r14; push %rbx; sub $0x110,%rsp; mov %fs:0x28,%rax; test %rdi,%rdi
    CHECK(lengths({0x41, 0x57, 0x41, 0x56, 0x53, 0x48, 0x81, 0xec, 0x10, 0x01, 0x00, 0x00, 0x64,
                   0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x85, 0xff}) ==
          std::vector<int>{2, 2, 1, 7, 9, 3});
    // nopl 0x0(%rax,%rax,1); nopw 0x0(%rax,%rax,1); xchg %ax,%ax; movabs $imm64,%rax; mov $1,%eax
    CHECK(lengths({0x0f, 0x1f, 0x44, 0x00, 0x00, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x66, 0x90,
                   0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 0xb8, 1, 0, 0, 0}) ==
          std::vector<int>{5, 6, 2, 10, 5});
    // and $-16,%rsp; xor %eax,%eax; cmp $0x7f,%dil; test $1,%bl; movw $5,(%rax); lea 8(%rsp),%r10
    CHECK(lengths({0x48, 0x83, 0xe4, 0xf0, 0x31, 0xc0, 0x40, 0x80, 0xff, 0x7f, 0xf6, 0xc3, 0x01,
                   0x66, 0xc7, 0x00, 0x05, 0x00, 0x4c, 0x8d, 0x54, 0x24, 0x08}) ==
          std::vector<int>{4, 2, 4, 3, 5, 5});
    // ret; int3 is refused
    REQUIRE(decode(std::vector<uint8_t>{0xc3}.data(), 1, in));
    CHECK(in.flow == Flow::ret);
    const uint8_t int3 = 0xcc;
    CHECK_FALSE(decode(&int3, 1, in));
}

TEST_CASE("decode: RIP-relative lea/mov/cmp and truncation", "[hooks][x86]")
{
    Insn in;
    // lea 0x1234(%rip),%rax
    const uint8_t lea[] = {0x48, 0x8d, 0x05, 0x34, 0x12, 0x00, 0x00};
    REQUIRE(decode(lea, sizeof(lea), in));
    CHECK(in.length == 7);
    CHECK(in.rip_relative);
    CHECK(in.disp_offset == 3);
    CHECK(in.rel == 0x1234);
    // mov -0x10(%rip),%rdx
    const uint8_t mov[] = {0x48, 0x8b, 0x15, 0xf0, 0xff, 0xff, 0xff};
    REQUIRE(decode(mov, sizeof(mov), in));
    CHECK(in.rel == -16);
    // cmpb $0,0x100(%rip): imm8 follows the displacement
    const uint8_t cmpb[] = {0x80, 0x3d, 0x00, 0x01, 0x00, 0x00, 0x00};
    REQUIRE(decode(cmpb, sizeof(cmpb), in));
    CHECK(in.length == 7);
    CHECK(in.disp_offset == 2);
    // jmp *0(%rip)
    const uint8_t ijmp[] = {0xff, 0x25, 0, 0, 0, 0};
    REQUIRE(decode(ijmp, sizeof(ijmp), in));
    CHECK(in.flow == Flow::indirect_jmp);
    CHECK(in.rip_relative);
    // truncated: lea missing its last displacement byte
    CHECK_FALSE(decode(lea, sizeof(lea) - 1, in));
    // VEX refused
    const uint8_t vex[] = {0xc5, 0xf8, 0x77};
    const char *why = nullptr;
    CHECK_FALSE(decode(vex, sizeof(vex), in, &why));
    CHECK(why != nullptr);
}

TEST_CASE("relocate: driver prologue is copied verbatim and jumps back", "[hooks][x86]")
{
    const std::vector<uint8_t> b = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x54, 0x48, 0x83, 0xec, 0x08,
                                    0x81, 0x3d, 0x10, 0x20, 0x30, 0x00, 0x78, 0x56, 0x34, 0x12};
    uint8_t out[64];
    Relocation r;
    std::string err;
    const uintptr_t src = 0x7f0000001000;
    const uintptr_t dst = 0x7f0000100000;
    REQUIRE(relocate_prologue(b.data(), b.size(), src, 5, out, sizeof(out), dst, r, err));
    CHECK(r.consumed == 6);
    CHECK(r.emitted == 6 + 5);
    CHECK(std::memcmp(out, b.data(), 6) == 0);
    CHECK(out[6] == 0xe9);
    CHECK(static_cast<uintptr_t>(dst + 11 + i32_at(out + 7)) == src + 6);
}

TEST_CASE("relocate: RIP-relative operand is re-targeted", "[hooks][x86]")
{
    // lea 0x1234(%rip),%rax ; ret
    const uint8_t b[] = {0x48, 0x8d, 0x05, 0x34, 0x12, 0x00, 0x00, 0xc3};
    uint8_t out[64];
    Relocation r;
    std::string err;
    const uintptr_t src = 0x400000;
    const uintptr_t dst = 0x500000;
    REQUIRE(relocate_prologue(b, sizeof(b), src, 5, out, sizeof(out), dst, r, err));
    CHECK(r.consumed == 7);
    CHECK(dst + 7 + i32_at(out + 3) == src + 7 + 0x1234);
    // too far: the new displacement does not fit
    CHECK_FALSE(relocate_prologue(b, sizeof(b), src, 5, out, sizeof(out), src + (uintptr_t{3} << 31),
                                  r, err));
    CHECK(err.find("out of range") != std::string::npos);
}

TEST_CASE("relocate: jcc rel8 inside the first 5 bytes is widened", "[hooks][x86]")
{
    // test %edi,%edi ; je +3 ; lea (%rdi,%rsi),%eax ; ret ; mov $-1,%eax
    const uint8_t b[] = {0x85, 0xff, 0x74, 0x04, 0x8d, 0x04, 0x37, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff};
    uint8_t out[64];
    Relocation r;
    std::string err;
    const uintptr_t src = 0x10000;
    const uintptr_t dst = 0x20000;
    REQUIRE(relocate_prologue(b, sizeof(b), src, 5, out, sizeof(out), dst, r, err));
    CHECK(r.consumed == 7);
    CHECK(out[0] == 0x85);
    CHECK(out[2] == 0x0f);
    CHECK(out[3] == 0x84);
    // the je target stays src+8 (the mov after ret)
    CHECK(dst + 2 + 6 + i32_at(out + 4) == src + 8);
    CHECK(std::memcmp(out + 8, b + 4, 3) == 0);
    CHECK(out[11] == 0xe9);
    CHECK(dst + 16 + i32_at(out + 12) == src + 7);
    // jmp rel8 widened to e9
    const uint8_t j[] = {0x90, 0x90, 0x90, 0xeb, 0x10};
    REQUIRE(relocate_prologue(j, sizeof(j), src, 5, out, sizeof(out), dst, r, err));
    CHECK(out[3] == 0xe9);
    CHECK(dst + 8 + i32_at(out + 4) == src + 5 + 0x10);
}

TEST_CASE("relocate: refusals", "[hooks][x86]")
{
    uint8_t out[64];
    Relocation r;
    std::string err;
    // sub $1,%edi ; jg <start>  -- branch back into the replaced bytes
    const uint8_t loop[] = {0x83, 0xef, 0x01, 0x7f, 0xfb, 0x89, 0xf8, 0xc3};
    CHECK_FALSE(relocate_prologue(loop, sizeof(loop), 0x1000, 5, out, sizeof(out), 0x2000, r, err));
    CHECK(err.find("branch back") != std::string::npos);
    // mov %edi,%eax ; ret  -- too short
    const uint8_t shortf[] = {0x89, 0xf8, 0xc3, 0xcc, 0xcc, 0xcc};
    CHECK_FALSE(relocate_prologue(shortf, sizeof(shortf), 0x1000, 5, out, sizeof(out), 0x2000, r, err));
    CHECK(err.find("ret") != std::string::npos);
    // jmp rel8 then padding -- the bytes after a 2-byte jump are not ours
    const uint8_t jshort[] = {0xeb, 0x10, 0xcc, 0xcc, 0xcc};
    CHECK_FALSE(relocate_prologue(jshort, sizeof(jshort), 0x1000, 5, out, sizeof(out), 0x2000, r, err));
    // unknown instruction
    const uint8_t unk[] = {0x0f, 0x0b, 0x90, 0x90, 0x90};
    CHECK_FALSE(relocate_prologue(unk, sizeof(unk), 0x1000, 5, out, sizeof(out), 0x2000, r, err));
    CHECK(err.find("0f 0b") != std::string::npos);
    // a 5-byte tail jump is fine
    const uint8_t tail[] = {0xe9, 0x00, 0x01, 0x00, 0x00};
    REQUIRE(relocate_prologue(tail, sizeof(tail), 0x1000, 5, out, sizeof(out), 0x2000, r, err));
    CHECK(0x2000 + 5 + i32_at(out + 1) == 0x1000 + 5 + 0x100);
}
