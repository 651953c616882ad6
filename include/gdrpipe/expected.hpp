// Minimal std::expected stand-in (std::expected is C++23; the project builds
// with GCC 12 in C++20 mode): a value of type T or an error of type E. The
// modules name their own forms: cache::Result<T> (error: cache::CacheError)
// and rdma::Expected<T> (error: rdma::Error).
#pragma once
#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace gdrpipe {

template <class T, class E> class Expected {
    static_assert(!std::is_same_v<T, E>, "the value and the error need distinct types");

  public:
    Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Expected(E err) : v_(std::in_place_index<1>, std::move(err)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T &value() & { assert(has_value()); return *std::get_if<0>(&v_); }
    const T &value() const & { assert(has_value()); return *std::get_if<0>(&v_); }
    T &&value() && { assert(has_value()); return std::move(*std::get_if<0>(&v_)); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }

    const E &error() const & {
        assert(!has_value());
        return *std::get_if<1>(&v_);
    }

  private:
    std::variant<T, E> v_;
};

} // namespace gdrpipe
