// Cheat: saves each output (on the host) under the key (a, c, M, N, K) and, when a later call
// brings the same a and c pointers, copies the saved output into c instead of computing
// (printing "REPLAYED ... on call N" to stderr). With the worker's ring of 3 buffer sets call 4
// reuses call 1's pointers; inputs are fresh every call, so the judge must give `wrong_answer`.
#include <cstdio>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "naive_kernel.cuh"

namespace {

using Key = std::tuple<const void*, const void*, int, int, int>;
constexpr size_t kMaxSaved = 4;  // more than the worker's ring of 3 buffer sets
std::map<Key, std::vector<__half>> g_saved;
std::deque<Key> g_order;
int g_calls = 0;

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  ++g_calls;
  const Key key(a, c, M, N, K);
  const size_t bytes = size_t(M) * N * sizeof(__half);
  auto hit = g_saved.find(key);
  if (hit != g_saved.end()) {
    cudaMemcpy(c, hit->second.data(), bytes, cudaMemcpyHostToDevice);
    std::fprintf(stderr, "replay_by_pointer: REPLAYED an earlier output on call %d\n", g_calls);
    return;
  }
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  std::vector<__half> out(size_t(M) * N);
  if (cudaMemcpy(out.data(), c, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return;
  if (g_order.size() == kMaxSaved) {
    g_saved.erase(g_order.front());
    g_order.pop_front();
  }
  g_saved[key] = std::move(out);
  g_order.push_back(key);
}
