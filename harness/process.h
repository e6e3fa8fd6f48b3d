// Running a child program and capturing its output, with no shell in between.
#pragma once

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

/// The directory holding the running executable (from /proc/self/exe).
std::string self_exe_dir();

/// True when `path` names an executable regular file.
bool is_executable(const std::string& path);

/// Reads a whole file; false + *err (naming the path) on failure.
bool read_file(const std::string& path, std::string* out, std::string* err);

/// Writes a whole file atomically (temp file + rename); false + *err on failure.
bool write_file_atomic(const std::string& path, const std::string& data, std::string* err);

/// mkdir -p; false + *err on failure.
bool make_dirs(const std::string& path, std::string* err);

}  // namespace fp4arena
