// Running a child program and capturing its output, with no shell in between.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fp4arena {

/// Runs argv[0] (searched in PATH) with `argv`, stdout and stderr merged into *output.
/// Returns the exit status (0..255), 128+signal if it died on a signal, or -1 if it could
/// not be started (then *output says why).
int run_capture(const std::vector<std::string>& argv, std::string* output);

/// As run_capture, but with a wall-clock limit: when `timeout_seconds` (> 0) pass first, the
/// child and everything it started (it runs in its own process group) are killed with
/// SIGKILL, *timed_out is set and 128+SIGKILL is returned; *output holds what came before.
int run_capture_with_timeout(const std::vector<std::string>& argv, double timeout_seconds,
                             std::string* output, bool* timed_out);

/// What a child program (and every program it starts) may use; 0 means no limit.
struct ChildLimits {
  double timeout_seconds = 0;        ///< wall clock, as run_capture_with_timeout
  uint64_t address_space_bytes = 0;  ///< RLIMIT_AS, per process: allocations past it fail
  uint64_t file_size_bytes = 0;      ///< RLIMIT_FSIZE: writing past it kills with SIGXFSZ
};

/// As run_capture_with_timeout, with the resource limits of `limits` set in the child
/// before it starts the program.
int run_capture_limited(const std::vector<std::string>& argv, const ChildLimits& limits,
                        std::string* output, bool* timed_out);

/// The run_capture functions keep at most this much of a child's output (the start of it,
/// then one line saying how much was left out); the rest is read and dropped, so a child
/// that prints without end costs the caller no memory.
constexpr size_t kMaxCapturedOutput = size_t(16) << 20;

/// Makes a fresh folder `parent`/`prefix`XXXXXX (mode 0700, mkdtemp) and returns its path;
/// empty + *err on failure.
std::string make_private_dir(const std::string& parent, const std::string& prefix,
                             std::string* err);

/// Removes `path` and everything beneath it without ever following a symbolic link (a link
/// is removed, never what it names), making folders writable where needed. False when
/// something could not be removed (or the tree is deeper than 256 levels).
bool remove_tree(const std::string& path);

/// The directory holding the running executable (from /proc/self/exe).
std::string self_exe_dir();

/// True when `path` names an executable regular file.
bool is_executable(const std::string& path);

/// Reads a whole file; false + *err (naming the path) on failure.
bool read_file(const std::string& path, std::string* out, std::string* err);

/// Writes a whole file atomically: a temporary file made exclusively beside it (never through
/// a link), renamed over `path` (a link there is replaced, not followed); false + *err on
/// failure.
bool write_file_atomic(const std::string& path, const std::string& data, std::string* err);
/// The same for a file made of two parts (a header and a large body), without joining them.
bool write_file_atomic(const std::string& path, const void* head, size_t head_bytes,
                       const void* body, size_t body_bytes, std::string* err);

/// mkdir -p; false + *err on failure.
bool make_dirs(const std::string& path, std::string* err);

}  // namespace fp4arena
