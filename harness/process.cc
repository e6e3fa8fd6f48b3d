#include "harness/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "harness/text.h"

namespace fp4arena {

namespace {

// In the forked child: its own process group when limited, output to the pipe's write end,
// the resource limits, then exec. Never returns. Nothing here allocates: the argument array is
// built before the fork, since past a lowered RLIMIT_AS a malloc may fail (a sanitizer's
// allocator, which reserves terabytes of shadow, always does).
[[noreturn]] void exec_child(char* const* args, const ChildLimits& limits, int out_fd) {
  if (limits.timeout_seconds > 0) setpgid(0, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  for (auto [resource, bytes] : {std::pair<int, uint64_t>{RLIMIT_AS, limits.address_space_bytes},
                                 std::pair<int, uint64_t>{RLIMIT_FSIZE, limits.file_size_bytes}}) {
    if (bytes == 0) continue;
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0) continue;
    // Never above the hard limit the judge itself runs under.
    rlim_t want = static_cast<rlim_t>(bytes);
    if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max) want = rl.rlim_max;
    rl.rlim_cur = want;
    rl.rlim_max = want;
    if (setrlimit(resource, &rl) != 0) {
      dprintf(2, "cannot limit the resources of %s: %s\n", args[0], std::strerror(errno));
      _exit(127);
    }
  }
  execvp(args[0], args);
  dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

// Reads the child's output from `fd` until it closes, keeping at most kMaxCapturedOutput
// bytes (a note counts the rest); with a timeout, kills the child's group at the deadline.
// True when it was killed.
bool read_child_output(int fd, pid_t pid, double timeout_seconds, std::string* output) {
  const bool limited = timeout_seconds > 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool killed = false;
  size_t dropped = 0;  // output bytes past kMaxCapturedOutput
  char buf[8192];
  for (;;) {
    if (limited) {
      double left =
          std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        kill(-pid, SIGKILL);
        killed = true;
        break;
      }
      struct pollfd p = {fd, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000.0 + 1, 1000.0)));
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      size_t room = kMaxCapturedOutput - std::min(output->size(), kMaxCapturedOutput);
      output->append(buf, std::min(room, static_cast<size_t>(n)));
      dropped += static_cast<size_t>(n) - std::min(room, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (dropped > 0) {
    *output += "\n[" + std::to_string(dropped) + " more bytes of output left out: at most " +
               std::to_string(kMaxCapturedOutput >> 20) + " MiB are kept]\n";
  }
  return killed;
}

int run_child(const std::vector<std::string>& argv, const ChildLimits& limits, std::string* output,
              bool* timed_out) {
  output->clear();
  if (timed_out) *timed_out = false;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *output = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    *output = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) exec_child(args.data(), limits, fds[1]);
  // Both sides set the group, so that a kill never races the child's own setpgid.
  if (limits.timeout_seconds > 0) setpgid(pid, pid);
  close(fds[1]);
  const bool killed = read_child_output(fds[0], pid, limits.timeout_seconds, output);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) {
    if (timed_out) *timed_out = true;
    return 128 + SIGKILL;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

int run_capture(const std::vector<std::string>& argv, std::string* output) {
  return run_child(argv, ChildLimits{}, output, nullptr);
}

int run_capture_with_timeout(const std::vector<std::string>& argv, double timeout_seconds,
                             std::string* output, bool* timed_out) {
  ChildLimits limits;
  limits.timeout_seconds = timeout_seconds;
  return run_child(argv, limits, output, timed_out);
}

int run_capture_limited(const std::vector<std::string>& argv, const ChildLimits& limits,
                        std::string* output, bool* timed_out) {
  return run_child(argv, limits, output, timed_out);
}

std::string self_exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  return dir_of(std::string(buf, static_cast<size_t>(n)));
}

bool is_executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool read_file(const std::string& path, std::string* out, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool write_file_atomic(const std::string& path, const void* head, size_t head_bytes,
                       const void* body, size_t body_bytes, std::string* err) {
  // A fresh temporary name beside the file (mkstemp: created exclusively, so never written
  // through a link planted under a predictable name), renamed over the file (which replaces
  // a link standing there instead of following it).
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(&tmp[0]);
  if (fd < 0) {
    *err = path + ": cannot create a temporary file beside it: " + std::strerror(errno);
    return false;
  }
  bool ok = fchmod(fd, 0644) == 0;
  for (auto [p, n] : {std::pair<const char*, size_t>{static_cast<const char*>(head), head_bytes},
                      std::pair<const char*, size_t>{static_cast<const char*>(body), body_bytes}}) {
    while (ok && n > 0) {
      ssize_t w = write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      ok = w > 0;
      if (ok) {
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
  }
  if (!ok) *err = tmp + ": write failed: " + std::strerror(errno);
  if (close(fd) != 0 && ok) {
    *err = tmp + ": write failed: " + std::strerror(errno);
    ok = false;
  }
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": rename failed: " + std::strerror(errno);
    ok = false;
  }
  if (!ok) unlink(tmp.c_str());
  return ok;
}

bool write_file_atomic(const std::string& path, const std::string& data, std::string* err) {
  return write_file_atomic(path, data.data(), data.size(), nullptr, 0, err);
}

bool make_dirs(const std::string& path, std::string* err) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = cur + ": cannot create directory: " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string make_private_dir(const std::string& parent, const std::string& prefix,
                             std::string* err) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    *err = pattern + ": cannot create a private folder: " + std::strerror(errno);
    return "";
  }
  return buf.data();
}

namespace {

// Removes the entry `name` of the folder open as `parent_fd`; `depth` folders deep.
bool remove_entry(int parent_fd, const char* name, int depth) {
  struct stat st;
  if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT;
  if (depth > 256) return false;
  // Entries of a folder can be listed and removed only when it is readable, writable and
  // searchable: make it so (it is ours; the name is not a link, as checked above).
  if ((st.st_mode & S_IRWXU) != S_IRWXU) fchmodat(parent_fd, name, S_IRWXU, 0);
  int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<std::string> names;
  int list_fd = dup(fd);
  if (DIR* d = list_fd >= 0 ? fdopendir(list_fd) : nullptr) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  } else if (list_fd >= 0) {
    close(list_fd);
  }
  bool ok = true;
  for (const std::string& n : names) ok = remove_entry(fd, n.c_str(), depth + 1) && ok;
  close(fd);
  return unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 && ok;
}

}  // namespace

bool remove_tree(const std::string& path) {
  if (path.empty()) return true;
  return remove_entry(AT_FDCWD, path.c_str(), 0);
}

}  // namespace fp4arena
