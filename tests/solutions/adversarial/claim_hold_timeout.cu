// Cheat: the worker claims that its hold timed out while the GPU spins. solve() is correct.cu
// plus a one-thread kernel that spins 200 us of %globaltimer after the real work (as
// correct_plus_100us.cu does with 100 us); a load-time constructor overwrites the worker's
// fp4arena::send_message (worker_patch.cuh's code route) with a copy that adds
// "hold_timed_out": true to every reply that carries the worker's event time and reports 15%
// of that time (the spins taken off). A judge once subtracted 200 ms from both of its clocks when
// the worker said so; this judge reads no such flag and times its own window, so the fixture must
// score as correct_plus_100us.cu does plus the 100 us more it spins
// (tests/harness/gpu_adversarial_test.cc, TimedWindowCoversAllDefaultStreamWork).
#include <unistd.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "naive_kernel.cuh"
#include "worker_patch.cuh"

namespace {

constexpr uint64_t kSpinNs = 200000;

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Stands in for fp4arena::send_message(int, const nlohmann::json&, std::string*): the same
// length-prefixed JSON, with the claim added.
bool forged_send(int fd, const nlohmann::json& msg, std::string* err) {
  nlohmann::json m = msg;
  if (m.is_object() && m.contains("event_ms")) {
    m["hold_timed_out"] = true;
    // The window's calls without their spins: about a sixth of what the events read.
    m["event_ms"] = m["event_ms"].get<double>() * 0.15;
  }
  const std::string body = m.dump();
  const uint32_t len = uint32_t(body.size());
  const char hdr[4] = {char(len), char(len >> 8), char(len >> 16), char(len >> 24)};
  if (write_all(fd, hdr, 4) && write_all(fd, body.data(), body.size())) return true;
  if (err) *err = "forged_send: the channel is gone";
  return false;
}

__attribute__((constructor)) void claim() {
  const uintptr_t at = worker_patch::main_program_function("_ZN8fp4arena12send_messageEi", true);
  const bool patched =
      at != 0 && worker_patch::write_jump(at, reinterpret_cast<const void*>(&forged_send));
  std::fprintf(stderr, "claim_hold_timeout.cu: the worker's send_message %s\n",
               at == 0   ? "not found"
               : patched ? "redirected"
                         : "found but not patched");
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  adversarial::spin_for<<<1, 1>>>(kSpinNs);
}
