// Building a user's solution into a shared object the worker can load.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/spec.h"

namespace fp4arena {

struct CompileOptions {
  std::string arch = "sm_90a";  ///< sm_XY or sm_XYa / sm_XYf; see arch_for_compute_capability
  std::string cache_dir;        ///< empty: default_cache_dir()
  std::string nvcc;             ///< empty: find_nvcc()
  bool use_cache = true;
  /// Extra header folders, each passed as `-I DIR`; each must be an existing directory whose
  /// name avoids the characters nvcc or a shell would interpret (see check_include_dirs).
  std::vector<std::string> include_dirs;
  /// Extra nvcc flags from the allow-list of check_nvcc_flags, passed in order.
  std::vector<std::string> extra_flags;
  /// Wall-clock limit (> 0) for the dependency scan and the compile together.
  double timeout_seconds = 300;
  /// Address space (RLIMIT_AS) each program nvcc starts may use; 0: no limit. A
  /// preprocessor or template bomb fails with "out of memory" instead of exhausting the
  /// machine. The solutions in solutions/ compile in under 512 MiB.
  uint64_t memory_limit_bytes = uint64_t(8) << 30;
  /// The largest file (RLIMIT_FSIZE) any of them may write; 0: no limit. Intermediate files
  /// and the object are far smaller; this bounds what a bomb can put on disk.
  uint64_t file_size_limit_bytes = uint64_t(4) << 30;
};

/// A header the solution reads (outside the system folders), hashed into the cache key.
struct HeaderHash {
  std::string path;    ///< canonical absolute path
  std::string sha256;  ///< of its bytes, 64 lowercase hex digits
};

/// One kernel (ptxas "entry function") as ptxas reported it for the compiled architecture.
struct KernelResources {
  std::string name;          ///< demangled, e.g. "void tile<128>(float*)"; as-is for extern "C"
  std::string mangled_name;  ///< the symbol ptxas named, e.g. "_Z4tileILi128EEvPf"
  std::string arch;          ///< e.g. "sm_90a"
  int registers = 0;         ///< per thread
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t shared_bytes = 0;  ///< static shared memory (dynamic shared memory is not known here)
  int64_t stack_bytes = 0;   ///< stack frame
  int barriers = 0;          ///< named barriers used
};

struct CompileResult {
  bool ok = false;            ///< false: the solution did not compile; see diagnostics
  bool cached = false;        ///< the object came from the cache
  bool usage_error = false;   ///< compile_solution returned false because of the options
  bool timed_out = false;     ///< the scan or compile ran past CompileOptions::timeout_seconds
  std::string so_path;        ///< the shared object (when ok)
  std::string source_sha256;  ///< of the solution source bytes
  std::string diagnostics;    ///< compiler output, with file:line locations and our notes; the
                              ///< ptxas info lines are removed (they are in `kernels`)
  std::string command;        ///< the nvcc command line, for reproduction
  std::vector<std::string> nvcc_flags;    ///< CompileOptions::extra_flags as given
  std::vector<std::string> include_dirs;  ///< CompileOptions::include_dirs, canonical
  std::vector<HeaderHash> headers;        ///< the non-system headers the solution reads
  std::vector<KernelResources> kernels;   ///< ptxas's resource report (also on a cache hit)
  double seconds = 0;                     ///< the scan plus the compile (or scan only on a hit)
  std::string nvcc_version;               ///< the compiler's release, e.g. "13.0.88"
};

/// The nvcc to use: $FP4ARENA_NVCC, `nvcc` on PATH, $CUDA_HOME/bin/nvcc,
/// /usr/local/cuda/bin/nvcc, then the one the judge was built with. Empty if none exists.
std::string find_nvcc();

/// `nvcc --version`'s release line, e.g. "13.0.88"; empty on failure.
std::string nvcc_version(const std::string& nvcc);
/// The release in the text `nvcc --version` printed, e.g. "13.0.88"; empty when none.
std::string nvcc_release(const std::string& version_text);

/// $FP4ARENA_CACHE_DIR, else $XDG_CACHE_HOME/fp4arena, else ~/.cache/fp4arena.
std::string default_cache_dir();

/// The architecture a device of compute capability major.minor gets: sm_90a for 9.0,
/// sm_100a for 10.0, sm_XY otherwise.
std::string arch_for_compute_capability(int major, int minor);

/// True for "sm_90", "sm_90a", "sm_100a", "sm_120f"...; false otherwise.
bool valid_arch(const std::string& arch);

/// True when every flag is on the allow-list (one argv token each unless noted):
///   -maxrregcount=N     N decimal, 1..255 (the one-token form only)
///   -DNAME, -DNAME=VALUE, -UNAME
///                       NAME a C identifier; VALUE empty or made of [A-Za-z0-9_.+-] (no
///                       spaces, quotes, commas or semicolons: nvcc splits -D on commas
///                       and runs its sub-tools through a shell)
///   --use_fast_math
///   -Xptxas -v          two tokens; -Xptxas=-v as one token is the same
///   --expt-relaxed-constexpr, --expt-extended-lambda   (CuTe and CUTLASS need the first)
///   -std=c++17, -std=c++20                              (replaces the default -std=c++17)
/// Otherwise false with *err naming the first refused flag and listing the allowed ones.
bool check_nvcc_flags(const std::vector<std::string>& flags, std::string* err);

/// True when every entry names an existing directory and contains none of the characters
/// nvcc would split on or a shell would interpret (`,` `;` `"` `'` `` ` `` `$` `\` `|` `&`
/// `<` `>` `*` `?` whitespace, control characters). Otherwise false with *err naming it.
bool check_include_dirs(const std::vector<std::string>& dirs, std::string* err);

/// The file names of the first rule of a make-style dependency listing (nvcc -M): the
/// prerequisites after the target's ':', with `\`-newline continuations joined, `\ ` as a
/// space inside a name, `\#` as '#' and `$$` as '$'. False + *err when there is no rule.
bool parse_make_dependencies(const std::string& text, std::vector<std::string>* files,
                             std::string* err);

/// The kernels of a `-Xptxas -v` report (any number of translation units, any order).
/// Non-entry functions ("Function properties" without "Compiling entry function") are
/// skipped. Text that is not a ptxas info line is ignored.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

/// `log` without ptxas's info lines (and the indented property lines that follow them);
/// ptxas warnings and errors and everything else are kept.
std::string strip_ptxas_info(const std::string& log);

/// A short fixed-width table (kernel, regs, spill stores/loads, smem, stack), one line per
/// kernel, ending in '\n'; long names are shortened in the middle.
std::string format_kernel_resources(const std::vector<KernelResources>& kernels);

/// A JSON array, one object per kernel with the fields of KernelResources
/// (name, mangled_name, arch, registers, spill_store_bytes, spill_load_bytes,
/// shared_bytes, stack_bytes, barriers).
nlohmann::json kernel_resources_json(const std::vector<KernelResources>& kernels);

/// The name on the first line holding `//`, optional blanks, `author:`, optional blanks and
/// a non-empty rest; trailing blanks and '\r' are removed. Empty when no line has one.
/// A line scanner: linear time on any input.
std::string author_of(const std::string& source);

/// The header force-included into the solution: includes and the solve prototype.
std::string prototype_header(const Spec& spec);

/// The parameters that differ between the expected declaration and the user's, one line each
/// ("  parameter 6: expected `__half* c`, yours `float* c`"), after a line saying so when the
/// counts differ; empty when every parameter matches (blanks and their place around '*' and
/// '&' aside).
std::string signature_differences(const std::string& expected, const std::string& yours);
/// The same for two parameter lists (C declarations or Python names), one line each.
std::string parameter_differences(const std::vector<std::string>& want,
                                  const std::vector<std::string>& got);

/// The call shim compiled next to the solution: `fp4arena_call(void* const* args)` unpacks
/// one pointer per parameter (to a device pointer or a scalar) and calls solve().
std::string call_shim(const Spec& spec);

/// Compiles `source_path` against `spec`. First asks nvcc (-M, with the compile's own flags)
/// for every header the solution reads; those outside the system folders are hashed into
/// the cache key and listed in result->headers. Returns false (and sets *err) when the
/// options are wrong (result->usage_error set) or the judge itself cannot work (no nvcc,
/// unreadable source, cache not writable); a solution that does not compile, reads a header
/// that is not a regular file of at most 16 MiB, or runs past the time limit gives true
/// with result->ok false and the diagnostics.
bool compile_solution(const Spec& spec, const std::string& source_path, const CompileOptions& opts,
                      CompileResult* result, std::string* err);

}  // namespace fp4arena
