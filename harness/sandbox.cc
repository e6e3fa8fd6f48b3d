#include "harness/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

// Landlock's system calls have the same numbers on every architecture; older C library
// headers may lack their names.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
// Rights newer than some installed <linux/landlock.h> (the kernel's ABI decides which are used).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

namespace fp4arena {
namespace {

// Landlock ABI 6 scopes (linux/landlock.h, LANDLOCK_SCOPE_*).
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kArch = 0;
#endif

constexpr uint32_t kNr = offsetof(struct seccomp_data, nr);
constexpr uint32_t kArchOff = offsetof(struct seccomp_data, arch);
// Low 32 bits of the first argument (little-endian).
constexpr uint32_t kArg0 = offsetof(struct seccomp_data, args[0]);
constexpr uint32_t kArg1 = offsetof(struct seccomp_data, args[1]);

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

constexpr uint32_t kRefused = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

// System call `nr` is allowed only when the low 32 bits of the argument at `arg` equal
// `value`; refused otherwise. Ends with the accumulator clobbered on the matching path only
// (every path of the block returns).
void allow_only_if(std::vector<sock_filter>* f, long nr, uint32_t arg, uint32_t value) {
  f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 4));
  f->push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg));
  f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1));
  f->push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f->push_back(stmt(BPF_RET | BPF_K, kRefused));
}

// The system calls refused outright, by group. None is needed by the CUDA runtime and driver
// or by a kernel's host code; each reaches beyond the worker (other processes, the kernel's
// state, the machine).
std::vector<long> refused_calls(bool allow_programs) {
  std::vector<long> r = {
      // Reading or writing another process's memory.
      SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
      // Signals by thread id alone or through a pidfd (the judge's process is reachable so).
      SYS_tkill, SYS_pidfd_open, SYS_pidfd_send_signal, SYS_pidfd_getfd,
      // Observing other processes and the kernel; loading programs into it.
      SYS_perf_event_open, SYS_bpf, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
      SYS_syslog,
      // SysV IPC (memory, queues and semaphores that outlive the worker).
      SYS_shmget, SYS_shmat, SYS_shmctl, SYS_shmdt, SYS_msgget, SYS_msgsnd, SYS_msgrcv, SYS_msgctl,
      SYS_semget, SYS_semop, SYS_semctl, SYS_semtimedop,
      // Keyrings.
      SYS_add_key, SYS_request_key, SYS_keyctl,
      // Mounts, namespaces, the root folder.
      SYS_mount, SYS_umount2, SYS_unshare, SYS_setns, SYS_pivot_root, SYS_chroot, SYS_open_tree,
      SYS_move_mount, SYS_fsopen, SYS_fsmount, SYS_fsconfig, SYS_fspick,
      // Kernel modules, reboot and kexec, swap, accounting, clocks, host names.
      SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_reboot, SYS_kexec_load,
      SYS_kexec_file_load, SYS_swapon, SYS_swapoff, SYS_acct, SYS_settimeofday, SYS_clock_settime,
      SYS_clock_adjtime, SYS_adjtimex, SYS_sethostname, SYS_setdomainname};
  if (allow_programs) return r;
  // Programs and processes.
  r.push_back(SYS_execve);
  r.push_back(SYS_execveat);
#ifdef SYS_fork
  r.push_back(SYS_fork);
#endif
#ifdef SYS_vfork
  r.push_back(SYS_vfork);
#endif
  return r;
}

// The allowlist (SeccompMode::kAllowlist): every system call the worker may make besides the
// ones with argument rules (clone, socket, the signals, ioctl and those in
// allowed_for_self), by group. What CUDA's runtime and driver, the C and C++ runtimes and a
// kernel's host code need; fp4arena_syscall_census (tests/tools) lists what workers make.
std::vector<long> allowed_calls() {
  return {
    // Memory.
    SYS_brk, SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap, SYS_madvise, SYS_msync, SYS_mlock,
        SYS_munlock, SYS_mincore, SYS_membarrier, SYS_mbind, SYS_get_mempolicy, SYS_set_mempolicy,
        SYS_memfd_create,
        // Files and descriptors (writes are Landlock's to restrict).
        SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev, SYS_preadv,
        SYS_pwritev, SYS_openat, SYS_close, SYS_close_range, SYS_lseek, SYS_fstat, SYS_newfstatat,
        SYS_statx, SYS_statfs, SYS_fstatfs, SYS_faccessat, SYS_faccessat2, SYS_readlinkat,
        SYS_getdents64, SYS_fcntl, SYS_dup, SYS_dup3, SYS_pipe2, SYS_ftruncate, SYS_fallocate,
        SYS_fsync, SYS_fdatasync, SYS_flock, SYS_renameat, SYS_renameat2, SYS_unlinkat, SYS_mkdirat,
        SYS_utimensat, SYS_fchmod, SYS_fchmodat, SYS_getcwd, SYS_umask, SYS_truncate, SYS_linkat,
        SYS_symlinkat, SYS_mknodat,
        // Waiting on descriptors and events.
        SYS_ppoll, SYS_pselect6, SYS_epoll_create1, SYS_epoll_ctl, SYS_epoll_pwait,
        SYS_epoll_pwait2, SYS_eventfd2, SYS_timerfd_create, SYS_timerfd_settime,
        SYS_timerfd_gettime,
        // UNIX sockets (socket() itself: AF_UNIX only, above).
        SYS_socketpair, SYS_connect, SYS_bind, SYS_sendto, SYS_recvfrom, SYS_sendmsg, SYS_recvmsg,
        SYS_shutdown, SYS_getsockopt, SYS_setsockopt, SYS_getsockname, SYS_getpeername,
        // Threads, scheduling, time.
        SYS_set_robust_list, SYS_get_robust_list, SYS_rseq, SYS_futex, SYS_set_tid_address,
        SYS_gettid, SYS_getpid, SYS_getppid, SYS_exit, SYS_exit_group, SYS_sched_yield,
        SYS_sched_getaffinity, SYS_sched_getparam, SYS_sched_getscheduler, SYS_sched_getattr,
        SYS_sched_get_priority_max, SYS_sched_get_priority_min, SYS_getpriority, SYS_getcpu,
        SYS_nanosleep, SYS_clock_nanosleep, SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday,
        SYS_wait4, SYS_waitid, SYS_restart_syscall,
        // Signals of its own (to other processes: the rules above).
        SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_sigaltstack,
        SYS_rt_sigtimedwait, SYS_rt_sigsuspend, SYS_rt_sigpending, SYS_setitimer, SYS_getitimer,
        SYS_timer_create, SYS_timer_settime, SYS_timer_gettime, SYS_timer_delete,
        // What it is and runs on.
        SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid, SYS_getgroups, SYS_getresuid,
        SYS_getresgid, SYS_capget, SYS_uname, SYS_sysinfo, SYS_getrusage, SYS_times, SYS_getrandom,
        SYS_prctl,
#if defined(__x86_64__)
        SYS_arch_prctl, SYS_open, SYS_stat, SYS_lstat, SYS_access, SYS_readlink, SYS_poll,
        SYS_select, SYS_epoll_create, SYS_epoll_wait, SYS_pipe, SYS_dup2, SYS_rename, SYS_unlink,
        SYS_mkdir, SYS_rmdir, SYS_chmod, SYS_getrlimit, SYS_time, SYS_alarm, SYS_pause,
        SYS_getdents, SYS_eventfd, SYS_creat, SYS_link, SYS_symlink, SYS_mknod,
#endif
  };
}

// Calls that may change another process's scheduling or limits: allowed on the caller only
// (a first argument, the process id, of 0). setpriority has its own rule (add_allowlist).
std::vector<long> allowed_for_self() {
  return {SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setparam, SYS_sched_setattr,
          SYS_prlimit64};
}

// Every right to change the file system that Landlock ABI `abi` knows.
uint64_t write_rights(long abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
               LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
               LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
               LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
               LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

// Threads of this process, or 0 when /proc cannot tell.
int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Allows `rights` beneath `path` in the ruleset `ruleset_fd`. With `keep_open` the folder's
// O_PATH descriptor stays open for the life of the process (see the /proc rule below).
bool allow_beneath(int ruleset_fd, const std::string& path, uint64_t rights, std::string* err,
                   bool keep_open = false, bool file = false) {
  int fd = open(path.c_str(), O_PATH | (file ? 0 : O_DIRECTORY) | O_CLOEXEC);
  if (fd < 0) {
    *err = "landlock: cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights;
  rule.parent_fd = fd;
  long rc = syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  int saved = errno;
  if (!keep_open || rc != 0) close(fd);
  if (rc != 0) {
    *err = "landlock_add_rule(" + path + "): " + std::strerror(saved);
    return false;
  }
  return true;
}

// Execution of each of `paths` (a file, or everything beneath a folder) in the ruleset.
bool allow_executables(int ruleset_fd, const std::vector<std::string>& paths, std::string* err) {
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      *err = "landlock: cannot find the program " + p + ": " + std::strerror(errno);
      return false;
    }
    if (!allow_beneath(ruleset_fd, p, LANDLOCK_ACCESS_FS_EXECUTE, err, false, !S_ISDIR(st.st_mode)))
      return false;
  }
  return true;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 1 ? 0 : static_cast<int>(abi);
}

bool restrict_file_writes(const std::string& writable_dir, std::string* description,
                          std::string* err, const std::vector<std::string>& executables) {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    if (errno == ENOSYS) {
      *description = "landlock unavailable (not in this kernel)";
    } else if (errno == EOPNOTSUPP) {
      *description = "landlock unavailable (disabled in this kernel)";
    } else {
      *description = std::string("landlock unavailable (") + std::strerror(errno) + ")";
    }
    return true;
  }
  // Threads that already run would keep every right: refuse rather than claim a restriction
  // that does not hold.
  int threads = thread_count();
  if (threads > 1) {
    *err = "landlock: the process already runs " + std::to_string(threads) +
           " threads; file writes must be restricted while it has one";
    return false;
  }
  const uint64_t handled =
      write_rights(abi) | (executables.empty() ? 0 : uint64_t(LANDLOCK_ACCESS_FS_EXECUTE));
  // The ruleset's attributes as ABI 6 defines them (older <linux/landlock.h> lack the last
  // two fields; an older kernel accepts the longer struct while they are zero). From ABI 6
  // the domain is scoped: no signal to a process outside it (the judge, other workers) and
  // no connection to an abstract UNIX socket made outside it.
  struct {
    uint64_t handled_access_fs = 0, handled_access_net = 0, scoped = 0;
  } attr;
  attr.handled_access_fs = handled;
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) {
    *err = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return false;
  }
  // Device files: write, truncate and ioctl on what exists (never new nodes or files).
  const uint64_t dev_rights =
      handled &
      (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV);
  // /proc: writing the existing files of this process's own threads only. cuInit() names
  // the threads it starts by writing /proc/<pid>/task/<tid>/comm, opened with fopen(...,
  // "wb"), so O_TRUNC: without the truncate right it fails (error 304, seen on an H200 with
  // driver 580). A rule binds an inode, and procfs makes a new inode whenever it looks a
  // folder up afresh, which it does once the old dentry is dropped: so the rule's folder,
  // /proc/<pid>/task, stays open (pinned) for the life of the worker, and the folders of
  // threads started later are its children. Everything else under /proc (/proc/sys,
  // /proc/sysrq-trigger, the process's own files outside task/) is refused, even to a
  // worker running as root.
  const std::string own_tasks = "/proc/" + std::to_string(getpid()) + "/task";
  bool ok =
      allow_beneath(ruleset, "/dev", dev_rights, err) &&
      allow_beneath(ruleset, own_tasks,
                    handled & (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE), err,
                    /*keep_open=*/true) &&
      (writable_dir.empty() ||
       allow_beneath(ruleset, writable_dir, handled & ~uint64_t(LANDLOCK_ACCESS_FS_EXECUTE),
                     err)) &&
      allow_executables(ruleset, executables, err);
  if (ok && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *err = std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
    ok = false;
  }
  if (ok && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    *err = std::string("landlock_restrict_self: ") + std::strerror(errno);
    ok = false;
  }
  close(ruleset);
  if (!ok) return false;
  *description =
      "landlock ABI " + std::to_string(abi) + " (file writes only " +
      (writable_dir.empty() ? std::string() : "under " + writable_dir + ", ") +
      "to devices under /dev and to its own threads under /proc" +
      (executables.empty() ? "" : "; programs run only from " + join(executables, ", ")) +
      (abi >= 6 ? "; signals and abstract UNIX sockets scoped to the worker" : "") + ")";
  return true;
}

// The end of the allowlist filter (the accumulator holds the call's number): the calls on
// the caller alone, the listed calls, and ENOSYS for everything else (the C library then
// falls back, as it does on an older kernel).
void add_allowlist(std::vector<sock_filter>* f, bool allow_programs) {
  for (long nr : allowed_for_self()) allow_only_if(f, nr, kArg0, 0);
  // setpriority(PRIO_PROCESS, 0, n) only: a process group or a user reaches other processes.
  f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_setpriority), 0, 6));
  f->push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg0));
  f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, PRIO_PROCESS, 0, 3));
  f->push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg1));
  f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
  f->push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f->push_back(stmt(BPF_RET | BPF_K, kRefused));
  std::vector<long> allowed = allowed_calls();
  // Where programs may run (Triton's compilers; Landlock says which), starting them too.
  if (allow_programs) allowed.insert(allowed.end(), {SYS_execve, SYS_execveat, SYS_vfork});
#ifdef SYS_fork
  if (allow_programs) allowed.push_back(SYS_fork);
#endif
  for (long nr : allowed) {
    f->push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 1));
    f->push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  f->push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
}

bool apply_worker_sandbox(std::string* description, std::string* err, SeccompMode mode,
                          bool allow_programs) {
  if (kArch == 0) {
    *description = "no seccomp (no filter for this architecture)";
    return true;
  }
  std::vector<sock_filter> f;
  // Another architecture's system call numbers mean nothing here: kill.
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArchOff));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kNr));
  for (long nr : refused_calls(allow_programs)) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, kRefused));
  }
#ifdef SYS_clone3
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone3), 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
#endif
  // clone: threads (CLONE_THREAD) only, unless programs may run.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone), 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg0));
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(stmt(BPF_RET | BPF_K, allow_programs ? SECCOMP_RET_ALLOW : kRefused));
  allow_only_if(&f, SYS_socket, kArg0, AF_UNIX);  // no network
  // Signals to this process and its threads only (never the judge, nor its process group).
  const uint32_t self = uint32_t(getpid());
  for (long nr :
       {long(SYS_kill), long(SYS_tgkill), long(SYS_rt_sigqueueinfo), long(SYS_rt_tgsigqueueinfo)}) {
    allow_only_if(&f, nr, kArg0, self);
  }
  // ioctl(TIOCSTI) types into whatever terminal a descriptor it inherited belongs to.
  // Every other request is allowed here: the accumulator now holds the request, so no later
  // rule may see it (the allowlist compares call numbers).
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_ioctl), 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg1));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(TIOCSTI), 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kRefused));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  if (mode == SeccompMode::kAllowlist) {
    add_allowlist(&f, allow_programs);
  } else {
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }

  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *err = std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
    return false;
  }
  // TSYNC: every thread the CUDA runtime has already started gets the filter too.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    *err = std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno);
    return false;
  }
  *description = std::string(mode == SeccompMode::kAllowlist
                                 ? "seccomp allowlist (every call not listed answers ENOSYS; "
                                 : "seccomp (") +
                 (allow_programs ? "programs only as Landlock allows, no "
                                 : "no exec, fork or new processes, ") +
                 "ptrace, process_vm_*, network sockets, "
                 "signals to other processes, TIOCSTI, perf events, BPF, io_uring, SysV IPC, "
                 "keyrings, mounts and namespaces, modules, reboot, clock setting)";
  return true;
}

}  // namespace fp4arena
