// The region cache's result type: a value or a CacheError.
#pragma once
#include "gdrpipe/expected.hpp"

#include <string>
#include <utility>

namespace gdrpipe::cache {

// Error codes >= 0 are the caller's (pin() may return e.g. a CUresult);
// negative codes are the cache's own.
enum : int {
    kErrInvalidArgument = -1, // len overflow, bad alignment, no pin op
    kErrPinException = -2,    // pin() threw
};

struct CacheError {
    int code = 0;
    std::string message;
};

template <class T> using Result = gdrpipe::Expected<T, CacheError>;

inline CacheError make_cache_error(int code, std::string message) {
    return CacheError{code, std::move(message)};
}

} // namespace gdrpipe::cache
