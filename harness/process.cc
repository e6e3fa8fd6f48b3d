#include "harness/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

namespace fp4arena {

namespace {

// One implementation for both entry points; a limit <= 0 means none (and no process group
// of its own, so that Ctrl-C at a terminal still reaches the child).
int run_child(const std::vector<std::string>& argv, double timeout_seconds, std::string* output,
              bool* timed_out) {
  output->clear();
  if (timed_out) *timed_out = false;
  const bool limited = timeout_seconds > 0;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *output = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *output = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    if (limited) setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  // Both sides set the group, so that a kill never races the child's own setpgid.
  if (limited) setpgid(pid, pid);
  close(fds[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool killed = false;
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
      struct pollfd p = {fds[0], POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000.0 + 1, 1000.0)));
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
    }
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      output->append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
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
  return run_child(argv, 0, output, nullptr);
}

int run_capture_with_timeout(const std::vector<std::string>& argv, double timeout_seconds,
                             std::string* output, bool* timed_out) {
  return run_child(argv, timeout_seconds, output, timed_out);
}

std::string self_exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
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

bool write_file_atomic(const std::string& path, const std::string& data, std::string* err) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      *err = tmp + ": cannot write: " + std::strerror(errno);
      return false;
    }
    out << data;
    if (!out.flush()) {
      *err = tmp + ": write failed";
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": rename failed: " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
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

}  // namespace fp4arena
