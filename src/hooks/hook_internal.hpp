// What the files of src/hooks share beyond the public cuda_hooks.hpp.
#pragma once

namespace gdrpipe::hooks::detail {

// The driver's cuPointerGetAttribute as install() found it (null before, or
// when the driver lacks it); never hooked itself.
void *pointer_attribute_fn() noexcept;

} // namespace gdrpipe::hooks::detail
