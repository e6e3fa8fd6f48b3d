// The worker's seccomp sandbox, installed in a forked child: network sockets, new processes
// and exec are refused; threads and AF_UNIX sockets still work.
#include "harness/sandbox.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace fp4arena {
namespace {

// Runs `body` in a child that installed the sandbox; its exit status is body's result
// (0 = every expectation held), 100 if the sandbox could not be installed.
int in_sandboxed_child(int (*body)()) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string what, err;
    if (!apply_worker_sandbox(&what, &err)) _exit(100);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(Sandbox, RefusesNetworkProcessesAndExec) {
  int r = in_sandboxed_child([] {
    if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM) return 1;
    if (socket(AF_INET6, SOCK_DGRAM, 0) >= 0) return 2;
    pid_t p = fork();
    if (p == 0) _exit(0);
    if (p >= 0) return 3;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);
    if (errno != EPERM) return 4;
    return 0;
  });
  EXPECT_EQ(r, 0) << "100: the kernel refused the filter; 1-4: a call that must fail worked";
}

TEST(Sandbox, ThreadsAndUnixSocketsStillWork) {
  int r = in_sandboxed_child([] {
    int ran = 0;
    std::thread t([&ran] { ran = 1; });
    t.join();
    if (!ran) return 1;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 2;
    if (socket(AF_UNIX, SOCK_DGRAM, 0) < 0) return 3;
    return 0;
  });
  EXPECT_EQ(r, 0);
}

}  // namespace
}  // namespace fp4arena
