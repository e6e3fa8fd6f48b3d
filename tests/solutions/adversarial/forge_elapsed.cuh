// Cheat machinery for the timing fixtures: a load-time constructor redirects the worker's
// cudaEventElapsedTime so that every device time the worker measures becomes
// max(t * kForgedFraction - kForgedOffsetMs, kForgedFloor * t), with the three constants
// defined by the including file (before the include) in namespace `forged`. The fixture's
// solve() then does the real work.
//
// Two routes, whichever the worker's build leaves open:
// - a worker that links the CUDA runtime dynamically exports cudaEventElapsedTime: dlsym
//   finds it, and its GOT entry is rewritten (mprotect, then write);
// - the worker as built (static runtime, not exported, full RELRO: no GOT entry to rewrite)
//   still lists the function in its ELF symbol table: it is looked up there (the executable
//   read through /proc/self/exe) and its first instructions are overwritten with a jump to
//   `scaled`, which asks this object's own runtime for the time (events are the driver's,
//   valid in both runtimes) and scales it.
#pragma once

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "worker_patch.cuh"

namespace {

using forged::kForgedFloor;
using forged::kForgedFraction;
using forged::kForgedOffsetMs;

using ElapsedFn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
ElapsedFn g_real = nullptr;  // the worker's function, on the GOT route
int g_patched = 0;

cudaError_t scaled(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  // On the code route the worker's function is overwritten: this object's own copy of the
  // runtime (hidden, linked in by nvcc) answers instead.
  cudaError_t e = g_real ? g_real(ms, start, stop) : cudaEventElapsedTime(ms, start, stop);
  if (e == cudaSuccess && ms) {
    const float forged = *ms * kForgedFraction - kForgedOffsetMs;
    *ms = forged > kForgedFloor * *ms ? forged : kForgedFloor * *ms;
  }
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
      *reinterpret_cast<void**>(p) = reinterpret_cast<void*>(&scaled);
      ++g_patched;
    }
  }
  return 1;
}

__attribute__((constructor)) void forge() {
  g_real = reinterpret_cast<ElapsedFn>(dlsym(RTLD_DEFAULT, "cudaEventElapsedTime"));
  if (g_real) {
    dl_iterate_phdr(patch_segments, nullptr);
    std::fprintf(stderr, "forge_elapsed.cuh: patched %d GOT entries\n", g_patched);
    return;
  }
  uintptr_t at = worker_patch::main_program_function("cudaEventElapsedTime");
  bool patched = at != 0 && worker_patch::write_jump(at, reinterpret_cast<const void*>(&scaled));
  std::fprintf(stderr, "forge_elapsed.cuh: the worker's cudaEventElapsedTime %s\n",
               at == 0   ? "not found in its symbol table"
               : patched ? "redirected (code patch)"
                         : "found but not patched");
}

}  // namespace
