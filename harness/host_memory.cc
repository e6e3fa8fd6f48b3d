#include "harness/host_memory.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fp4arena {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_ARENA_MAX, 1);        // threads share the arena that keeps freed memory
    mallopt(M_MMAP_MAX, 0);         // large blocks come from that arena, not mappings
    mallopt(M_TRIM_THRESHOLD, -1);  // and its free top is never given back (-1: never trim)
    return true;
  }();
  (void)done;
#endif
}

}  // namespace fp4arena
