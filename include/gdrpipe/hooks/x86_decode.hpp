// A small x86-64 instruction-length decoder for the instructions that occur in
// function prologues. It exists only so that the patcher (patcher.hpp) can
// relocate the first whole instructions of a function into a trampoline: it
// reports each instruction's length and the fields that depend on where the
// instruction lives (RIP-relative displacements, relative branch targets).
// Anything outside the supported subset is refused, never guessed.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gdrpipe::hooks::x86 {

enum class Flow : uint8_t {
    next,          // falls through to the next instruction
    jcc,           // conditional relative branch (rel8 or rel32)
    jmp,           // unconditional relative jump (rel8 or rel32)
    call,          // relative call (rel32)
    ret,           // ret / ret imm16
    indirect_jmp,  // ff /4, ff /5
    indirect_call, // ff /2, ff /3
};

struct Insn {
    uint8_t length = 0;        // total length in bytes (prefixes included)
    uint8_t opcode_offset = 0; // offset of the first opcode byte (after prefixes and REX)
    Flow flow = Flow::next;
    uint8_t rel_offset = 0;    // offset of the branch displacement (jcc/jmp/call)
    uint8_t rel_size = 0;      // 1 or 4 (0: not a relative branch)
    uint8_t cond = 0;          // condition code 0..15 of a jcc
    bool rip_relative = false; // memory operand is disp32(%rip)
    uint8_t disp_offset = 0;   // offset of that disp32 (the immediate may follow it)
    bool endbr64 = false;      // f3 0f 1e fa
    int32_t rel = 0;           // branch displacement or RIP displacement (sign-extended)

    // true when control never reaches the next instruction
    bool terminator() const
    {
        return flow == Flow::jmp || flow == Flow::ret || flow == Flow::indirect_jmp;
    }
    // absolute branch target (rel_size != 0) or RIP-relative address, for an
    // instruction located at `ip`
    uintptr_t target(uintptr_t ip) const
    {
        return ip + length + static_cast<intptr_t>(rel);
    }
};

// Decodes one instruction at `code`; at most `avail` bytes may be read.
// Returns false for an unsupported, invalid or truncated instruction and then
// sets *why (a static string) when why is not null.
bool decode(const uint8_t *code, size_t avail, Insn &out, const char **why = nullptr);

} // namespace gdrpipe::hooks::x86
