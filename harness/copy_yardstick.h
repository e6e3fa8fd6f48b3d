// A generic yardstick for memory-bound challenges: one device-to-device copy of a given
// number of bytes (half read, half written: the speed of light a user understands).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "harness/challenge.h"

namespace fp4arena {

/// A yardstick whose launch() enqueues cudaMemcpyAsync of `bytes` / 2 bytes from one device
/// buffer to another on the default stream, so that bytes read plus bytes written equal
/// `bytes` (the GB/s of a challenge's minimum traffic). nullptr + *err on a CUDA error.
std::unique_ptr<Yardstick> make_copy_yardstick(size_t bytes, std::string* err);

}  // namespace fp4arena
