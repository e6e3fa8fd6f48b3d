// The judge's window refuses buffer and sync handles a hostile worker could send (harness/
// call_window.h): every refusal is an error naming the buffer, never a fault in the judge's
// own CUDA context. The path with real handles from a worker is exercised by every judge
// test that runs a solution.
#include "harness/call_window.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "harness/pre_call.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

std::vector<WindowBuffer> two_buffers() {
  WindowBuffer in, out;
  in.payload = out.payload = 1024;
  in.canary = out.canary = 4096;
  out.output = true;
  return {in, out};
}

TEST(GpuCallWindow, RefusesMalformedMissingAndUnknownHandles) {
  FP4ARENA_SKIP_WITHOUT_GPU();
  PreCall pre;
  std::string err;
  ASSERT_TRUE(pre.init(0.1, &err)) << err;
  CallWindow w;
  ASSERT_TRUE(w.init(&pre, &err)) << err;
  const std::string zeros(128, '0');
  std::string some(128, 'a');

  EXPECT_FALSE(w.map({zeros}, two_buffers(), 1, &err));
  EXPECT_EQ(err, "the worker named 1 buffer handle(s) for 2 buffer(s)");
  // Two sets of two buffers need four handles.
  EXPECT_FALSE(w.map({zeros, some}, two_buffers(), 2, &err));
  EXPECT_EQ(err, "the worker named 2 buffer handle(s) for 4 buffer(s)");
  EXPECT_FALSE(w.map({"xyz", zeros}, two_buffers(), 1, &err));
  EXPECT_EQ(err, "the handle of buffer 0 is not 128 hex digits");
  // One handle twice, even spelt in another case, is one buffer named twice.
  std::string upper = some;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_FALSE(w.map({some, upper}, two_buffers(), 1, &err));
  EXPECT_EQ(err, "the handle of buffer 1 names a buffer named before");
  // Bytes that name no exported allocation.
  EXPECT_FALSE(w.map({some, zeros}, two_buffers(), 1, &err));
  EXPECT_EQ(err.rfind("the handle of buffer 0 cannot be mapped: ", 0), 0u) << err;
  // The sync buffer's handle is checked the same way.
  EXPECT_FALSE(w.map_sync("xyz", &err));
  EXPECT_EQ(err, "the sync buffer's handle is not 128 hex digits");
  EXPECT_FALSE(w.map_sync(some, &err));
  EXPECT_EQ(err.rfind("the sync buffer cannot be mapped: ", 0), 0u) << err;
  // No buffers at all (the calibration's window) is fine; without a sync buffer no window
  // opens (nothing is enqueued that could wait forever), and the context is still usable.
  EXPECT_TRUE(w.map({}, {}, 1, &err)) << err;
  EXPECT_EQ(w.fill(nullptr), cudaSuccess);
  EXPECT_EQ(w.stage({{}}), cudaSuccess);
  EXPECT_EQ(w.open(1), cudaErrorInvalidValue);
  EXPECT_EQ(w.release(1), cudaSuccess);
  EXPECT_EQ(w.wait(std::chrono::steady_clock::now() + std::chrono::seconds(10)), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace fp4arena
