// Minimal expected-like result for the region cache (std::expected is C++23;
// the project builds with GCC 12 in C++20 mode).
#pragma once
#include <cassert>
#include <string>
#include <utility>
#include <variant>

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

template <class T> class Result {
  public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(CacheError err) : v_(std::in_place_index<1>, std::move(err)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T &value() & { assert(has_value()); return *std::get_if<0>(&v_); }
    const T &value() const & { assert(has_value()); return *std::get_if<0>(&v_); }
    T &&value() && { assert(has_value()); return std::move(*std::get_if<0>(&v_)); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }

    const CacheError &error() const & {
        assert(!has_value());
        return *std::get_if<1>(&v_);
    }

  private:
    std::variant<T, CacheError> v_;
};

inline CacheError make_cache_error(int code, std::string message) {
    return CacheError{code, std::move(message)};
}

} // namespace gdrpipe::cache
