// The value-or-error type of the C++ core: a value of type T or an Error
// (a code and a message). A minimal std::expected stand-in (std::expected is
// C++23; the project builds with GCC 12 in C++20 mode).
//
// What an error code means is the module's convention: the RDMA module uses
// negative errno values (-ENOMEM, -EINVAL, ...); the region cache passes the
// pin op's own codes (>= 0, e.g. a CUresult) and uses negative codes of its
// own (cache::kErrInvalidArgument, ...).
#pragma once
#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace gdrpipe {

struct Error {
    int code = 0;
    std::string message;
};

inline Error make_error(int code, std::string message) {
    return Error{code, std::move(message)};
}

template <class T> class Expected {
    static_assert(!std::is_same_v<T, Error>, "the value and the error need distinct types");

  public:
    Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Expected(Error err) : v_(std::in_place_index<1>, std::move(err)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T &value() & { assert(has_value()); return *std::get_if<0>(&v_); }
    const T &value() const & { assert(has_value()); return *std::get_if<0>(&v_); }
    T &&value() && { assert(has_value()); return std::move(*std::get_if<0>(&v_)); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }

    const Error &error() const & {
        assert(!has_value());
        return *std::get_if<1>(&v_);
    }

  private:
    std::variant<T, Error> v_;
};

} // namespace gdrpipe
