// The capi functions' error text: msg into the caller's buffer err (len
// bytes, may be null), truncated.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace gdrpipe::capi {

inline void set_err(char *err, std::size_t len, const std::string &msg) {
    if (err != nullptr && len > 0) std::snprintf(err, len, "%s", msg.c_str());
}

} // namespace gdrpipe::capi
