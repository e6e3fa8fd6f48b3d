// Building a user's solution into a shared object the worker can load.
#pragma once

#include <string>
#include <vector>

#include "harness/spec.h"

namespace fp4arena {

struct CompileOptions {
  std::string arch = "sm_90a";  ///< sm_XY or sm_XYa / sm_XYf; see arch_for_compute_capability
  std::string cache_dir;        ///< empty: default_cache_dir()
  std::string nvcc;             ///< empty: find_nvcc()
  bool use_cache = true;
};

struct CompileResult {
  bool ok = false;            ///< false: the solution did not compile; see diagnostics
  bool cached = false;        ///< the object came from the cache
  std::string so_path;        ///< the shared object (when ok)
  std::string source_sha256;  ///< of the solution source bytes
  std::string diagnostics;    ///< compiler output, with file:line locations and our notes
  std::string command;        ///< the nvcc command line, for reproduction
  double seconds = 0;
};

/// The nvcc to use: $FP4ARENA_NVCC, `nvcc` on PATH, $CUDA_HOME/bin/nvcc,
/// /usr/local/cuda/bin/nvcc, then the one the judge was built with. Empty if none exists.
std::string find_nvcc();

/// `nvcc --version`'s release line, e.g. "13.0.88"; empty on failure.
std::string nvcc_version(const std::string& nvcc);

/// $FP4ARENA_CACHE_DIR, else $XDG_CACHE_HOME/fp4arena, else ~/.cache/fp4arena.
std::string default_cache_dir();

/// The architecture a device of compute capability major.minor gets: sm_90a for 9.0,
/// sm_100a for 10.0, sm_XY otherwise.
std::string arch_for_compute_capability(int major, int minor);

/// True for "sm_90", "sm_90a", "sm_100a", "sm_120f"...; false otherwise.
bool valid_arch(const std::string& arch);

/// The header force-included into the solution: includes and the solve prototype.
std::string prototype_header(const Spec& spec);

/// The call shim compiled next to the solution: `fp4arena_call(void* const* args)` unpacks
/// one pointer per parameter (to a device pointer or a scalar) and calls solve().
std::string call_shim(const Spec& spec);

/// Compiles `source_path` against `spec`. Returns false (and sets *err) only when the
/// judge itself cannot work (no nvcc, unreadable source, cache not writable); a solution
/// that does not compile gives true with result->ok false and the diagnostics.
bool compile_solution(const Spec& spec, const std::string& source_path, const CompileOptions& opts,
                      CompileResult* result, std::string* err);

}  // namespace fp4arena
