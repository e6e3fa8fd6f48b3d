// Cheat: keep the inputs in L2 from one call to the next. solve() is read.cu's (the same
// kernel, tests/solutions/stream_read/read_kernel.cuh) launched with a persisting
// access-policy window over x (hit ratio 1), after its first call reserved the largest
// persisting L2 set-aside the device allows. The judge fills the same input buffers again for
// every window; lines marked persisting would survive a flush that only writes 2x L2 of other
// data (normal writes cannot evict the set-aside: pygpubench PR #49). The judge's flush resets
// persisting lines and its context's set-aside before it writes (harness/pre_call.cu), so the
// fixture must score as read.cu does (tests/harness/gpu_adversarial_test.cc,
// GpuStreamRead.PersistingL2WindowGainsNothing).
#include <cstdio>

#include "../../stream_read/read_kernel.cuh"

extern "C" void solve(const uint8_t* x, int* sum, int W) {
  static size_t window_max = 0;
  if (window_max == 0) {
    int device = 0, persisting = 0, window = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&persisting, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, device);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(persisting));
    window_max = size_t(window);
    std::fprintf(stderr, "persisting_l2.cu: set-aside %d bytes, window at most %d bytes\n",
                 persisting, window);
  }
  const size_t bytes = size_t(W) * 16;
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeAccessPolicyWindow;
  attr.val.accessPolicyWindow.base_ptr = const_cast<uint8_t*>(x);
  attr.val.accessPolicyWindow.num_bytes = bytes < window_max ? bytes : window_max;
  attr.val.accessPolicyWindow.hitRatio = 1.0f;
  attr.val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  stream_read::launch_read(x, sum, W, &attr, 1);
}
