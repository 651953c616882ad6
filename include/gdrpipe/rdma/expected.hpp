// Minimal expected-like result for the RDMA module (std::expected is C++23).
// Error codes are negative errno values (-ENOMEM, -EINVAL, ...) unless noted.
#pragma once
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gdrpipe::rdma {

struct Error {
    int code = 0; // negative errno
    std::string message;
};

template <class T> class Expected {
  public:
    Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Expected(Error err) : v_(std::in_place_index<1>, std::move(err)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }
    T &value() & { assert(has_value()); return *std::get_if<0>(&v_); }
    const T &value() const & { assert(has_value()); return *std::get_if<0>(&v_); }
    T &&value() && { assert(has_value()); return std::move(*std::get_if<0>(&v_)); }
    T &operator*() & { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    const Error &error() const & { assert(!has_value()); return *std::get_if<1>(&v_); }

  private:
    std::variant<T, Error> v_;
};

inline Error make_error(int code, std::string message) {
    return Error{code, std::move(message)};
}

} // namespace gdrpipe::rdma
