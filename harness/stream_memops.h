// Stream memory operations: the GPU's front end waits for, or writes, a 32-bit word in device
// memory as one more command of a stream, with no kernel and no host involved. The judge and
// the worker order their two contexts' streams with them (harness/call_window.h): the
// worker's launch stream waits for the judge's "go" word, and the judge's stream waits for
// the worker's "done" word, so that the judge's own events bracket the worker's device work
// on the GPU's timeline.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace fp4arena {

/// cuStreamWaitValue32 and cuStreamWriteValue32, fetched through the runtime's entry-point
/// query so that nothing links the driver library (machines without a GPU have none). Both
/// null where the driver lacks them.
struct StreamMemOps {
  PFN_cuStreamWaitValue32_v11070 wait = nullptr;
  PFN_cuStreamWriteValue32_v11070 write = nullptr;
  bool ok() const { return wait && write; }
};

inline const StreamMemOps& stream_memops() {
  static const StreamMemOps ops = [] {
    StreamMemOps o;
    auto fetch = [](const char* name) -> void* {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult q;
      if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess) {
        return nullptr;
      }
      return p;
    };
    o.wait = reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(fetch("cuStreamWaitValue32"));
    o.write = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(fetch("cuStreamWriteValue32"));
    return o;
  }();
  return ops;
}

/// The worker's sync buffer: kSyncBytes of device memory it allocates once and exports to the
/// judge; the judge writes the call's sequence number at kSyncGoOffset when its window has
/// delivered the inputs, the worker at kSyncDoneOffset after its stop event.
constexpr size_t kSyncBytes = 256;
constexpr size_t kSyncGoOffset = 0;
constexpr size_t kSyncDoneOffset = 128;

}  // namespace fp4arena
