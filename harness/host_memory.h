// The judge's host memory between windows: what it frees is kept for its next allocations.
#pragma once

namespace fp4arena {

/// Makes this process's malloc keep the memory it frees for later allocations instead of
/// giving it back to the kernel: one arena, no chunk of its own mapping, no trimming (glibc;
/// a no-op elsewhere and where a sanitizer's allocator replaces glibc's). A judge makes a
/// window's input sets and the oracle's answers (over a gigabyte a set on the quantizers'
/// largest cases) and frees them every window; with glibc's defaults each large block is a
/// mapping of its own, unmapped when freed, so every window faulted its pages in and had the
/// kernel zero them again, threads contending for the process's address space as they did
/// (fp4arena_judge_cpu, 2 cores: 2.6M page faults and 8 s of system time for six
/// nvfp4_quantize sets; 0.44M and 1.6 s this way, the peak resident size unchanged).
/// Call early, before threads start; calling it again does nothing.
void keep_freed_host_memory();

}  // namespace fp4arena
