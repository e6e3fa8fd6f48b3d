// The worker's sandbox, installed in a forked child: network sockets, new processes and
// exec are refused; threads and AF_UNIX sockets still work; with Landlock, files change only
// in the private folder (and devices under /dev). And the judge's side: each worker gets a
// private folder, removed with it.
#include "harness/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <thread>

#include "harness/process.h"
#include "harness/worker_client.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

// Runs `body` in a child that installed the sandbox (`mode`'s filter); its exit status is
// body's result (0 = every expectation held), 100 if the sandbox could not be installed.
int in_sandboxed_child(int (*body)(), SeccompMode mode = SeccompMode::kAllowlist) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string what, err;
    if (!apply_worker_sandbox(&what, &err, mode)) _exit(100);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

// Starts a stand-in worker: the shell script `script` as fp4arena_worker, with `dir`/solution.so
// as the object (which need not exist). It never says hello, so start() fails; *err tells how.
std::unique_ptr<WorkerProcess> start_stand_in(const std::string& dir, const std::string& script,
                                              std::string* err) {
  if (!write_file_atomic(dir + "/worker", "#!/bin/sh\n" + script, err) ||
      chmod((dir + "/worker").c_str(), 0755) != 0) {
    return nullptr;
  }
  WorkerOptions opts;
  opts.worker_path = dir + "/worker";
  opts.so_path = dir + "/solution.so";
  opts.shm_bytes = 4096;
  opts.start_timeout_seconds = 20;
  return WorkerProcess::start(opts, err);
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

// Each refused group, tried with a call that would change nothing if it got through (a bad
// argument, a null signal, a pipe for a terminal): the filter answers EPERM first.
// Both filters: the allowlist (the worker's) and the denylist (run's diagnostic).
int refused_groups_body() {
  auto refused = [](long ret) { return ret == -1 && errno == EPERM; };
  if (!refused(syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0))) return 1;
  if (!refused(syscall(SYS_bpf, 0xFFFF, nullptr, 0))) return 2;
  if (!refused(syscall(SYS_io_uring_setup, 0, nullptr))) return 3;
  if (!refused(syscall(SYS_shmget, 0 /* IPC_PRIVATE */, 0, 0))) return 4;
  if (!refused(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1, 0))) return 5;
  if (!refused(syscall(SYS_unshare, 0))) return 6;
  if (!refused(syscall(SYS_mount, nullptr, nullptr, nullptr, 0, nullptr))) return 7;
  if (!refused(syscall(SYS_reboot, 0, 0, 0, nullptr))) return 8;  // bad magic numbers
  if (!refused(syscall(SYS_init_module, nullptr, 0, ""))) return 9;
  timespec ts{};
  if (!refused(syscall(SYS_clock_settime, -1, &ts))) return 10;  // no such clock
  // Signal 0 only asks whether the process exists.
  if (!refused(syscall(SYS_kill, getppid(), 0))) return 11;
  if (!refused(syscall(SYS_kill, 0, 0))) return 12;  // the process group
  if (syscall(SYS_kill, getpid(), 0) != 0) return 13;
  if (syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0) != 0) return 14;
  if (!refused(syscall(SYS_tkill, syscall(SYS_gettid), 0))) return 15;
  if (!refused(syscall(SYS_pidfd_open, getppid(), 0))) return 16;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 17;
  char c = 'x';
  if (!refused(syscall(SYS_ioctl, pipe_fds[0], TIOCSTI, &c))) return 18;
  if (syscall(SYS_ioctl, pipe_fds[0], FIONREAD, &c) != 0) return 19;  // other ioctls work
  return 0;
}

TEST(Sandbox, RefusesWhatReachesBeyondTheWorker) {
  for (SeccompMode mode : {SeccompMode::kAllowlist, SeccompMode::kDenylist}) {
    EXPECT_EQ(in_sandboxed_child(refused_groups_body, mode), 0)
        << (mode == SeccompMode::kAllowlist ? "allowlist" : "denylist")
        << ": 100: the kernel refused the filter; 1-19: the call of that number in "
           "refused_groups_body was not answered as expected";
  }
}

// The allowlist refuses all the denylist does, answers ENOSYS to a call it does not list, and
// leaves what a worker's host code does every day working: threads and locks, files in a
// folder, memory maps, pipes, UNIX sockets, event and epoll descriptors, sleeping, the time,
// random bytes, thread names; scheduling calls only on itself.
TEST(Sandbox, TheAllowlistKeepsEverydayCallsAndAnswersENOSYSToTheRest) {
  int r = in_sandboxed_child(
      [] {
        auto refused = [](long ret) { return ret == -1 && errno == EPERM; };
        auto unlisted = [](long ret) { return ret == -1 && errno == ENOSYS; };
        if (!refused(syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0))) return 1;
        if (!refused(syscall(SYS_kill, getppid(), 0))) return 2;
        if (!refused(socket(AF_INET, SOCK_STREAM, 0))) return 3;
        if (!unlisted(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", nullptr, nullptr, 0))) return 4;
        if (!unlisted(syscall(SYS_fanotify_init, 0, 0))) return 5;
        if (!refused(syscall(SYS_setpriority, PRIO_PROCESS, getppid(), 0))) return 6;
        if (syscall(SYS_setpriority, PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0)) != 0) return 7;
        std::mutex m;
        int ran = 0;
        std::thread t([&] {
          std::lock_guard<std::mutex> lock(m);
          ran = 1;
        });
        t.join();
        if (!ran) return 8;
        char dir[] = "/tmp/fp4arena-allowlist-XXXXXX";
        if (!mkdtemp(dir)) return 9;
        const std::string file = std::string(dir) + "/f";
        const int fd = open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, "abc", 3) != 3 || lseek(fd, 0, SEEK_SET) != 0) return 10;
        void* map = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED || std::memcmp(map, "abc", 3) != 0) return 11;
        munmap(map, 4096);
        close(fd);
        if (unlink(file.c_str()) != 0 || rmdir(dir) != 0) return 12;
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 13;
        if (eventfd(0, EFD_CLOEXEC) < 0 || epoll_create1(EPOLL_CLOEXEC) < 0) return 14;
        timespec ts{0, 1000};
        if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr) != 0) return 15;
        unsigned char bytes[8];
        if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes) return 16;
        if (prctl(PR_SET_NAME, "allowlisted", 0, 0, 0) != 0) return 17;
        struct utsname u;
        if (uname(&u) != 0) return 18;
        rlimit lim;
        if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 19;
        // ioctl: any request but TIOCSTI (the filter's rule on the request must not leave the
        // request where the allowlist reads a call's number).
        int queued = -1;
        if (ioctl(fds[0], FIONREAD, &queued) != 0 || queued != 0) return 20;
        char c = 'x';
        if (!refused(ioctl(fds[0], TIOCSTI, &c))) return 21;
        return 0;
      },
      SeccompMode::kAllowlist);
  EXPECT_EQ(r, 0) << "100: the kernel refused the filter; 1-21: the call of that number in "
                     "the test's body was not answered as expected";
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

using testing_util::binary_dir;
using testing_util::source_dir;

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Runs `body` in a child that restricted file writes to `writable` (Landlock) and then
// installed the seccomp filter, as the worker does; the child's exit status is body's result
// (0 = every expectation held), 100/101 if a step of the sandbox failed.
int in_landlocked_child(const std::string& writable, const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string files, seccomp, err;
    if (!restrict_file_writes(writable, &files, &err)) _exit(100);
    if (!apply_worker_sandbox(&seccomp, &err)) _exit(101);
    // The description, where the parent can read it (the private folder is writable).
    FILE* f = std::fopen((writable + "/description").c_str(), "w");
    if (!f) _exit(102);
    std::fputs((seccomp + "; " + files).c_str(), f);
    std::fclose(f);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

// 0 when `rc` is a failure with EACCES.
bool refused(int rc) {
  return rc < 0 && errno == EACCES;
}

TEST(Sandbox, FileWritesOnlyInThePrivateFolder) {
  const int abi = landlock_abi();
  if (abi == 0) GTEST_SKIP() << "this kernel has no Landlock (or it is disabled)";
  std::string err;
  const std::string priv = make_private_dir(binary_dir(), "sandbox-test-private-", &err);
  ASSERT_FALSE(priv.empty()) << err;
  const std::string tmp_out = make_private_dir("/tmp", "fp4arena-sandbox-test-", &err);
  ASSERT_FALSE(tmp_out.empty()) << err;
  // Outside names in the build folder too: there a refused rename or link is Landlock's
  // doing, not a move across file systems.
  const std::string build_out = binary_dir() + "/sandbox-test-escape-" + std::to_string(getpid());
  const std::string build_moved = build_out + "-moved", build_linked = build_out + "-linked";
  const std::string existing = tmp_out + "/existing";
  ASSERT_TRUE(write_file_atomic(existing, "judge's\n", &err)) << err;

  int r = in_landlocked_child(priv, [&]() -> int {
    // Outside the private folder: nothing may be created, written, truncated or removed.
    if (!refused(open(build_out.c_str(), O_WRONLY | O_CREAT, 0644))) return 1;
    if (!refused(open((tmp_out + "/new").c_str(), O_WRONLY | O_CREAT, 0644))) return 2;
    if (!refused(open(existing.c_str(), O_WRONLY))) return 3;
    if (!refused(open(existing.c_str(), O_RDWR | O_APPEND))) return 4;
    if (abi >= 3 && !refused(truncate(existing.c_str(), 0))) return 5;
    if (!refused(unlink(existing.c_str()))) return 6;
    if (!refused(mkdir((tmp_out + "/dir").c_str(), 0755))) return 7;
    if (!refused(symlink("/etc/passwd", (tmp_out + "/link").c_str()))) return 8;
    if (!refused(mkfifo((tmp_out + "/fifo").c_str(), 0644))) return 9;
    // Inside it: create, write, read back, rename, make a folder, move, link, remove.
    const std::string a = priv + "/a", b = priv + "/b", sub = priv + "/sub";
    int fd = open(a.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "xyz", 3) != 3 || close(fd) != 0) return 10;
    if (rename(a.c_str(), b.c_str()) != 0) return 11;
    if (mkdir(sub.c_str(), 0755) != 0 || rename(b.c_str(), (sub + "/c").c_str()) != 0) return 12;
    if (symlink("c", (sub + "/l").c_str()) != 0) return 13;
    std::string text;
    if (!read_file(sub + "/l", &text, &err) || text != "xyz") return 14;
    if (truncate((sub + "/c").c_str(), 1) != 0) return 15;
    if (unlink((sub + "/l").c_str()) != 0 || unlink((sub + "/c").c_str()) != 0) return 16;
    if (rmdir(sub.c_str()) != 0) return 17;
    // Nothing moves out of it either.
    fd = open(a.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || close(fd) != 0) return 18;
    if (rename(a.c_str(), build_moved.c_str()) == 0) return 19;
    if (link(a.c_str(), build_linked.c_str()) == 0) return 20;
    // Reading stays allowed everywhere; devices stay writable.
    if (!read_file(source_dir() + "/CMakeLists.txt", &text, &err) || text.empty()) return 21;
    if (!read_file(existing, &text, &err) || text != "judge's\n") return 22;
    FILE* null = std::fopen("/dev/null", "w");  // O_CREAT | O_TRUNC, as fopen does
    if (!null || std::fputs("dropped", null) < 0 || std::fclose(null) != 0) return 23;
    // A thread started now is bound too; naming it from here writes
    // /proc/self/task/<tid>/comm, as cuInit() does for its threads.
    int thread_result = -1;
    int gate[2];
    if (pipe(gate) != 0) return 25;
    std::thread t([&] {
      thread_result = refused(open((tmp_out + "/from-thread").c_str(), O_WRONLY | O_CREAT, 0644));
      char c;
      (void)!read(gate[0], &c, 1);
    });
    int named = pthread_setname_np(t.native_handle(), "sandboxed");
    (void)!write(gate[1], "x", 1);
    t.join();
    if (thread_result != 1) return 24;
    if (named != 0) return 26;
    // cuInit() names its threads with fopen(comm, "wb"): O_TRUNC, so truncation too.
    const std::string comm = "/proc/self/task/" + std::to_string(gettid()) + "/comm";
    FILE* name = std::fopen(comm.c_str(), "wb");
    if (!name || std::fputs("judged", name) < 0 || std::fclose(name) != 0) return 29;
    // Nothing else under /proc is writable: not the process's own files outside task/ (its
    // name, its OOM score), not the system's (/proc/sys, refused to root as well).
    if (!refused(open("/proc/self/comm", O_WRONLY))) return 30;
    if (!refused(open("/proc/self/oom_score_adj", O_WRONLY))) return 31;
    // /proc gives no way out: a file reached through /proc/self/fd is checked where it is.
    fd = open(existing.c_str(), O_RDONLY);
    if (fd < 0) return 27;
    std::string via_proc = "/proc/self/fd/" + std::to_string(fd);
    if (!refused(open(via_proc.c_str(), O_WRONLY))) return 28;
    close(fd);
    return 0;
  });
  EXPECT_EQ(r, 0) << "100: Landlock refused; 101: seccomp refused; 1-9, 19, 20, 28: a change "
                     "outside the private folder worked; 10-18: one inside failed; 21-23: a "
                     "read or /dev/null failed; 24: a later thread escaped; 26: naming a "
                     "thread failed; 29: fopen(comm, \"wb\") failed, as cuInit() would; "
                     "30, 31: a /proc file outside the process's task/ folder was writable";
  std::string description;
  EXPECT_TRUE(read_file(priv + "/description", &description, &err)) << err;
  EXPECT_EQ(description,
            "seccomp allowlist (every call not listed answers ENOSYS; no exec, fork or new "
            "processes, ptrace, process_vm_*, network sockets, "
            "signals to other processes, TIOCSTI, perf events, BPF, io_uring, SysV IPC, "
            "keyrings, mounts and namespaces, modules, reboot, clock setting); landlock ABI " +
                std::to_string(abi) + " (file writes only under " + priv +
                ", to devices under /dev and to its own threads under /proc" +
                (abi >= 6 ? "; signals and abstract UNIX sockets scoped to the worker" : "") + ")");
  for (const char* name : {"new", "dir", "link", "fifo", "from-thread"}) {
    EXPECT_FALSE(exists(tmp_out + "/" + name)) << name;
  }
  for (const std::string& path : {build_out, build_moved, build_linked}) {
    EXPECT_FALSE(exists(path)) << path;
  }
  std::string text;
  EXPECT_TRUE(read_file(existing, &text, &err) && text == "judge's\n") << text;
  EXPECT_TRUE(remove_tree(priv));
  EXPECT_TRUE(remove_tree(tmp_out));
}

TEST(Sandbox, FileWritesAreRestrictedOnlyWhileSingleThreaded) {
  // Landlock binds the threads started after it, never those already running: with a second
  // thread alive the restriction is refused, not claimed.
  if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no Landlock (or it is disabled)";
  pid_t pid = fork();
  if (pid == 0) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) _exit(1);
    std::thread t([&] {
      char c;
      (void)!read(pipe_fds[0], &c, 1);
    });
    std::string files, err;
    bool ok = restrict_file_writes("", &files, &err);
    (void)!write(pipe_fds[1], "x", 1);
    t.join();
    if (ok) _exit(2);
    _exit(err.find("already runs 2 threads") == std::string::npos ? 3 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// From Landlock ABI 6 the worker's domain is scoped: no signal leaves it (the judge is
// outside), whatever seccomp allows.
TEST(Sandbox, LandlockScopesSignalsToTheWorker) {
  const int abi = landlock_abi();
  if (abi < 6) GTEST_SKIP() << "Landlock ABI " << abi << " has no scopes (6 needed)";
  pid_t pid = fork();
  if (pid == 0) {
    std::string what, err;
    if (!restrict_file_writes("", &what, &err)) _exit(100);
    if (kill(getppid(), 0) == 0 || errno != EPERM) _exit(1);  // signal 0: only a probe
    if (kill(getpid(), 0) != 0) _exit(2);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "100: not restricted; 1: the judge could be signalled; 2: the worker could not signal "
         "itself ("
      << status << ")";
}

// The Python worker's sandbox for Triton: programs may start, but only those listed (here
// /bin/true and the ELF interpreter it needs) run; any other exec is refused by Landlock.
// Under either filter: the allowlist lets a process be started and a program run where
// programs may run (fork, vfork, execve), as Triton's compilers need.
TEST(Sandbox, ProgramsRunOnlyFromTheListedPaths) {
  if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no Landlock (or it is disabled)";
  char real_true[PATH_MAX], real_echo[PATH_MAX], interp[PATH_MAX];
  if (!realpath("/bin/true", real_true) || !realpath("/bin/echo", real_echo))
    GTEST_SKIP() << "no /bin/true or /bin/echo";
  if (!realpath("/lib64/ld-linux-x86-64.so.2", interp) &&
      !realpath("/lib/ld-linux-aarch64.so.1", interp)) {
    GTEST_SKIP() << "no ELF interpreter at its usual place";
  }
  auto run = [](const char* path) {
    pid_t p = fork();
    if (p == 0) {
      execl(path, path, static_cast<char*>(nullptr));
      _exit(errno == EACCES ? 77 : 78);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
  };
  for (SeccompMode mode : {SeccompMode::kDenylist, SeccompMode::kAllowlist}) {
    pid_t pid = fork();
    if (pid == 0) {
      std::string files, seccomp, err;
      if (!restrict_file_writes("", &files, &err, {real_true, interp})) _exit(100);
      if (files.find("programs run only from") == std::string::npos) _exit(101);
      if (!apply_worker_sandbox(&seccomp, &err, mode, true)) _exit(102);
      if (run(real_true) != 0) _exit(1);
      if (run(real_echo) != 77) _exit(2);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (mode == SeccompMode::kAllowlist ? "allowlist" : "denylist")
        << ": 1: the listed program did not run; 2: another program was not refused with EACCES; "
           "10x: the sandbox could not be set up ("
        << status << ")";
  }
}

TEST(Sandbox, RestrictingToAMissingFolderIsAnError) {
  if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no Landlock (or it is disabled)";
  pid_t pid = fork();
  if (pid == 0) {
    std::string files, err;
    bool ok = restrict_file_writes("/nonexistent/fp4arena-private", &files, &err);
    _exit(!ok && err.find("/nonexistent/fp4arena-private") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(PrivateFolder, RemovedWholeWithoutFollowingLinks) {
  std::string err;
  const std::string outside = make_private_dir(binary_dir(), "private-test-outside-", &err);
  ASSERT_FALSE(outside.empty()) << err;
  ASSERT_TRUE(write_file_atomic(outside + "/keep", "kept\n", &err)) << err;
  const std::string priv = make_private_dir(binary_dir(), "private-test-", &err);
  ASSERT_FALSE(priv.empty()) << err;
  struct stat st;
  ASSERT_EQ(stat(priv.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // What a solution could leave behind: deep folders, a folder it made unreadable and
  // unwritable, links to the judge's files and folders, a FIFO.
  std::string deep = priv;
  for (int i = 0; i < 20; ++i) deep += "/d" + std::to_string(i);
  ASSERT_TRUE(make_dirs(deep, &err)) << err;
  ASSERT_TRUE(write_file_atomic(deep + "/f", "x", &err)) << err;
  ASSERT_TRUE(make_dirs(priv + "/locked/inner", &err)) << err;
  ASSERT_TRUE(write_file_atomic(priv + "/locked/inner/f", "x", &err)) << err;
  ASSERT_EQ(chmod((priv + "/locked/inner").c_str(), 0), 0);
  ASSERT_EQ(chmod((priv + "/locked").c_str(), 0), 0);
  ASSERT_EQ(symlink((outside + "/keep").c_str(), (priv + "/file-link").c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), (priv + "/dir-link").c_str()), 0);
  ASSERT_EQ(mkfifo((priv + "/fifo").c_str(), 0600), 0);
  EXPECT_TRUE(remove_tree(priv));
  EXPECT_FALSE(exists(priv));
  std::string text;
  EXPECT_TRUE(read_file(outside + "/keep", &text, &err) && text == "kept\n") << err;
  EXPECT_TRUE(remove_tree(outside));
  EXPECT_FALSE(exists(outside));
  EXPECT_TRUE(remove_tree(outside)) << "a folder already gone is not an error";
}

// The worker never holds the judge's terminal: its stdin is /dev/null, and what it prints
// on stdout and stderr reaches the judge's stderr through a pipe, each line marked as the
// solution's, at most kSolutionOutputBytes of it.
TEST(WorkerOutput, StdinIsNullAndOutputIsRelayedMarkedAndBounded) {
  std::string err;
  const std::string dir = make_private_dir(binary_dir(), "worker-output-test-", &err);
  ASSERT_FALSE(dir.empty()) << err;
  const std::string report = dir + "/stdin", captured = dir + "/stderr";
  const std::string script = "readlink /proc/self/fd/0 > '" + report +
                             "'\necho to-stdout\necho to-stderr >&2\n"
                             "head -c 2000000 /dev/zero | tr '\\0' x\nexit 3\n";
  // This process's stderr goes to a file while the worker runs (and its relay is joined).
  fflush(stderr);
  const int saved = dup(2);
  const int file = open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(file, 0);
  dup2(file, 2);
  auto w = start_stand_in(dir, script, &err);
  dup2(saved, 2);
  close(saved);
  close(file);
  EXPECT_EQ(w, nullptr);
  std::string in, out;
  ASSERT_TRUE(read_file(report, &in, &err)) << err;
  EXPECT_EQ(in, "/dev/null\n");
  ASSERT_TRUE(read_file(captured, &out, &err)) << err;
  EXPECT_NE(out.find(std::string(kSolutionOutputPrefix) + "to-stdout\n"), std::string::npos);
  EXPECT_NE(out.find(std::string(kSolutionOutputPrefix) + "to-stderr\n"), std::string::npos);
  EXPECT_LT(out.size(), kSolutionOutputBytes + 64 * 1024) << "the output was not bounded";
  EXPECT_NE(out.find("more bytes (not shown)"), std::string::npos);
  EXPECT_TRUE(remove_tree(dir));
}

// A judge running as root (CI's is) starts its worker as a user of its own: another uid and
// gid, no capability (effective, permitted or in the bounding set), no_new_privs, and a
// private folder that this user owns. A stand-in worker reports what it is.
TEST(WorkerIdentity, ARootJudgeStartsItsWorkerAsAnUnprivilegedUserOfItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "the judge is not root here: the worker keeps its user";
  std::string err;
  const std::string dir = make_private_dir(binary_dir(), "worker-identity-test-", &err);
  ASSERT_FALSE(dir.empty()) << err;
  ASSERT_TRUE(make_dirs(dir + "/out", &err)) << err;
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod((dir + "/out").c_str(), 0777), 0);
  const std::string report = dir + "/out/report";
  ASSERT_TRUE(write_file_atomic(dir + "/solution.so", "not an object", &err)) << err;
  const std::string script =
      "{ id -u; id -g; id -G; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status; "
      "stat -c %u \"$TMPDIR\"; touch \"$TMPDIR/x\" && echo wrote; } >> '" +
      report + "'\nexit 3\n";
  // The stand-in never says hello, so the judge starts it once more as its own user (as it
  // does for a worker that cannot start as its own): the first report is the one to read.
  auto w = start_stand_in(dir, script, &err);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(err.find("exited with status 3"), std::string::npos) << err;
  std::string text;
  ASSERT_TRUE(read_file(report, &text, &err)) << err;
  const std::string id = std::to_string(kWorkerIdBase + uint32_t(getpid()) % kWorkerIdSpan);
  const std::string first = id + "\n" + id + "\n" + id +
                            "\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                            "CapBnd:\t0000000000000000\nNoNewPrivs:\t1\n" +
                            id + "\nwrote\n";
  EXPECT_EQ(text.substr(0, first.size()), first) << text;
  EXPECT_EQ(text.substr(first.size(), 2), "0\n") << "the second start runs as the judge's user";
  EXPECT_TRUE(remove_tree(dir));
}

TEST(PrivateFolder, TheJudgeGivesEachWorkerOneAndRemovesIt) {
  // A stand-in worker reports its arguments and environment, then exits before its hello.
  std::string err;
  const std::string dir = make_private_dir(binary_dir(), "private-test-worker-", &err);
  ASSERT_FALSE(dir.empty()) << err;
  const std::string report = dir + "/report";
  auto w = start_stand_in(dir,
                          "{ echo \"$@\"; echo \"TMPDIR=$TMPDIR\"; "
                          "echo \"CUDA_CACHE_PATH=$CUDA_CACHE_PATH\"; "
                          "test -d \"$TMPDIR\" && echo made; } > '" +
                              report + "'\nexit 3\n",
                          &err);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(err.find("exited with status 3"), std::string::npos) << err;
  std::string text;
  ASSERT_TRUE(read_file(report, &text, &err)) << err;
  size_t at = text.find("--tmp ");
  ASSERT_NE(at, std::string::npos) << text;
  std::string priv = text.substr(at + 6, text.find('\n', at) - at - 6);
  EXPECT_NE(priv.find("/fp4arena-worker-"), std::string::npos) << priv;
  EXPECT_NE(text.find("TMPDIR=" + priv + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("CUDA_CACHE_PATH=" + priv + "/cuda-cache\n"), std::string::npos) << text;
  EXPECT_NE(text.find("made\n"), std::string::npos) << text;
  EXPECT_FALSE(exists(priv)) << "the private folder outlived its worker";
  EXPECT_TRUE(remove_tree(dir));
}

TEST(PrivateFolder, TheRealWorkerGetsPastItsFileRestriction) {
  // Without a GPU the real worker stops at CUDA's initialisation, which comes after Landlock:
  // the error must be CUDA's, never the sandbox's. With one it starts, sandboxed.
  std::string err;
  WorkerOptions opts;
  opts.worker_path = testing_util::worker_bin();
  opts.so_path = binary_dir() + "/nonexistent-solution.so";
  opts.shm_bytes = 1 << 20;
  opts.start_timeout_seconds = 60;
  auto w = WorkerProcess::start(opts, &err);
  if (!w) {
    EXPECT_NE(err.find("cannot open CUDA device"), std::string::npos) << err;
    return;
  }
  std::string priv = w->private_dir();
  EXPECT_TRUE(exists(priv));
  if (landlock_abi() > 0) {
    EXPECT_NE(w->sandbox().find("; landlock ABI "), std::string::npos) << w->sandbox();
    EXPECT_NE(w->sandbox().find(priv), std::string::npos) << w->sandbox();
  }
  w.reset();
  EXPECT_FALSE(exists(priv));
}

}  // namespace
}  // namespace fp4arena
