// Cheat: keys each output (kept on the host) by the first 64 bytes of `a` and the shape, and on
// a repeated key copies the saved output into c instead of computing (printing "REPLAYED ... on
// call N" to stderr). The judge gives every benchmark call fresh inputs, so the key never
// repeats and the verdict must be `passed` with no replay (were it to replay: `wrong_answer`).
#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "naive_kernel.cuh"

namespace {

constexpr size_t kSampleBytes = 64;
constexpr size_t kMaxSaved = 4;
std::map<std::string, std::vector<__half>> g_saved;
std::deque<std::string> g_order;
int g_calls = 0;

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  ++g_calls;
  const size_t sample = std::min(kSampleBytes, size_t(M) * (K / 2));
  std::string key(sample, '\0');
  if (cudaMemcpy(&key[0], a, sample, cudaMemcpyDeviceToHost) != cudaSuccess) return;
  key += "|" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  const size_t bytes = size_t(M) * N * sizeof(__half);
  auto hit = g_saved.find(key);
  if (hit != g_saved.end()) {
    cudaMemcpy(c, hit->second.data(), bytes, cudaMemcpyHostToDevice);
    std::fprintf(stderr, "replay_by_content: REPLAYED an earlier output on call %d\n", g_calls);
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
