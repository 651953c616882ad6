// Names and short descriptions of CUresult codes (the list: error_codes.def).
// Kept in the core so that errors can be described without a working driver.
#include "gdrpipe/cuda/driver.hpp"

namespace gdrpipe::cuda {
namespace {

struct ErrorText {
    CUresult code;
    const char *name;
    const char *text;
};

#define GP_CU_ERR(_code, _text) {_code, #_code, _text},
constexpr ErrorText kErrors[] = {
#include "error_codes.def"
};
#undef GP_CU_ERR

const ErrorText *find(CUresult r) noexcept {
    for (const ErrorText &e : kErrors) {
        if (e.code == r) return &e;
    }
    return nullptr;
}

} // namespace

const char *error_name(CUresult r) noexcept {
    const ErrorText *e = find(r);
    return e != nullptr ? e->name : "CUDA_ERROR_<unknown>";
}

std::string describe(CUresult r) {
    const ErrorText *e = find(r);
    if (e == nullptr) {
        return "CUDA_ERROR_<unknown> (CUresult " + std::to_string(static_cast<int>(r)) + ")";
    }
    return std::string(e->name) + " (" + e->text + ")";
}

} // namespace gdrpipe::cuda
