// Headless Chromium for the tests of the pages the judge writes (leaderboard, sweep): where
// it is, running a command to read what it printed, and the DOM it makes of a file.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

namespace fp4arena::testing_util {

/// Runs `command` through the shell; its exit status and stdout (stderr goes to the log).
inline std::pair<int, std::string> capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  return {pclose(pipe), out};
}

/// `s` quoted for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

/// Chromium's path, or "" where it is not installed.
inline std::string find_chromium() {
  if (access("/usr/bin/chromium", X_OK) == 0) return "/usr/bin/chromium";
  auto [status, path] = capture("command -v chromium 2>/dev/null");
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  return status == 0 ? path : "";
}

/// The DOM headless Chromium builds from the file at `path` (absolute), with a fresh profile
/// in `profile_dir`: its exit status and the serialised DOM (a page's, or an SVG document's,
/// where a parse error shows as a parsererror element). 60 s at most.
inline std::pair<int, std::string> dump_dom(const std::string& chromium, const std::string& path,
                                            const std::string& profile_dir) {
  return capture("timeout 60 " + shell_quote(chromium) +
                 " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                 " --disable-background-networking --disable-component-update --disable-sync"
                 " --user-data-dir=" +
                 shell_quote(profile_dir) + " --dump-dom " + shell_quote("file://" + path) +
                 " 2>/dev/null");
}

}  // namespace fp4arena::testing_util
