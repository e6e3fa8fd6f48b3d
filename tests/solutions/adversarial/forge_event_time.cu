// Cheat: a load-time constructor rewrites the worker's GOT entry of cudaEventElapsedTime
// (mprotect, then write) so that every device time the worker measures is halved. The work
// itself is correct. The worker's report is a lie the judge's own clock catches: the
// benchmarks must get `timing_mismatch` ("below what the judge's clock allows").
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "naive_kernel.cuh"

namespace {

using ElapsedFn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
ElapsedFn g_real = nullptr;
int g_patched = 0;

cudaError_t halved(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  cudaError_t e = g_real(ms, start, stop);
  if (e == cudaSuccess && ms) *ms *= 0.5f;
  return e;
}

// Scans the writable-after-relocation segments of the main program for a pointer to the
// real function and replaces it.
int patch_segments(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name && info->dlpi_name[0] != '\0') return 0;  // the main program only
  const long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD && ph.p_type != PT_GNU_RELRO) continue;
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    for (uintptr_t p = (lo + 7) & ~uintptr_t(7); p + 8 <= hi; p += 8) {
      if (*reinterpret_cast<void**>(p) != reinterpret_cast<void*>(g_real)) continue;
      uintptr_t pg = p & ~uintptr_t(page - 1);
      if (mprotect(reinterpret_cast<void*>(pg), page, PROT_READ | PROT_WRITE) != 0) continue;
      *reinterpret_cast<void**>(p) = reinterpret_cast<void*>(&halved);
      ++g_patched;
    }
  }
  return 1;
}

__attribute__((constructor)) void forge() {
  g_real = reinterpret_cast<ElapsedFn>(dlsym(RTLD_DEFAULT, "cudaEventElapsedTime"));
  if (g_real) dl_iterate_phdr(patch_segments, nullptr);
  std::fprintf(stderr, "forge_event_time: patched %d GOT entries\n", g_patched);
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K, 0);
}
