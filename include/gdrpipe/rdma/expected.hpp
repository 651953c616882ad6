// The RDMA module's result type: a value or an Error. Error codes are
// negative errno values (-ENOMEM, -EINVAL, ...) unless noted.
#pragma once
#include "gdrpipe/expected.hpp"

#include <string>
#include <utility>

namespace gdrpipe::rdma {

struct Error {
    int code = 0; // negative errno
    std::string message;
};

template <class T> using Expected = gdrpipe::Expected<T, Error>;

inline Error make_error(int code, std::string message) {
    return Error{code, std::move(message)};
}

} // namespace gdrpipe::rdma
