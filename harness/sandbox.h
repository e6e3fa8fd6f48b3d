// The worker's sandbox, in two steps:
//
// 1. restrict_file_writes() (Landlock), while the worker still has one thread, before CUDA
//    starts: from then on the process may change the file system only inside its private
//    folder, plus write to existing files under /dev (devices) and /proc. Reading stays
//    allowed.
// 2. apply_worker_sandbox() (seccomp), after CUDA is initialised and before the solution is
//    loaded: no programs or processes started, no tracing, reading or signalling of other
//    processes, no network sockets, nothing that reaches the kernel's or the machine's state.
//
// Raw system calls (no library), x86-64 and aarch64.
#pragma once

#include <string>
#include <vector>

namespace fp4arena {

/// The running kernel's Landlock ABI version, 0 when it has no Landlock (or it is disabled).
int landlock_abi();

/// Landlock binds the calling thread and the threads and processes it starts later, never
/// threads that already run (before Linux's TSYNC flag, ABI 8): so this must run while the
/// process has one thread. From then on, every right to change the file system (write or
/// truncate a file, create, remove, rename or link anything, make folders, device nodes,
/// FIFOs, sockets or symbolic links, ioctl on devices) is refused with EACCES except under
/// `writable_dir` (all of them), under /dev (write, truncate and ioctl on existing files
/// only: CUDA's driver opens /dev/nvidia* read-write) and under /proc/<pid>/task of the
/// calling process (writing and truncating existing files only: cuInit() names its threads
/// through /proc/<pid>/task/<tid>/comm, opened with O_TRUNC; that folder's descriptor is
/// kept open so the rule keeps holding). Rights the
/// running kernel's Landlock ABI lacks are left out (REFER needs ABI 2, TRUNCATE 3,
/// IOCTL_DEV 5). Reading and mapping files stay allowed everywhere. `writable_dir` may be
/// empty (then only /dev and the process's own threads under /proc).
///
/// Sets PR_SET_NO_NEW_PRIVS (Landlock needs it). Where the kernel has no Landlock (or it is
/// disabled) nothing is restricted, the call still succeeds, and *description says so
/// ("landlock unavailable (not in this kernel)"); otherwise *description is e.g. "landlock
/// ABI 7 (file writes only under DIR, to devices under /dev and to its own threads under /proc;
/// signals and abstract UNIX sockets scoped to the worker)": from ABI 6 the domain is scoped
/// (no signal to, and no abstract UNIX socket connection with, a process outside it).
/// False with *err when the process already runs more than one thread, or the kernel refused the
/// rules (e.g. `writable_dir` does not exist).
///
/// `executables` (files or folders, real paths): when given, running a program is refused too
/// (Landlock's execute right, checked on the program and on its ELF interpreter) except the
/// listed files and what lies beneath the listed folders: the Python worker's compilers
/// (Triton's ptxas, the C compiler), which apply_worker_sandbox(allow_programs) lets it start.
/// Empty (the CUDA worker): running programs is seccomp's to refuse.
bool restrict_file_writes(const std::string& writable_dir, std::string* description,
                          std::string* err, const std::vector<std::string>& executables = {});

/// Installs the seccomp filter (and PR_SET_NO_NEW_PRIVS) on the calling process and all threads
/// it starts later. Refused with EPERM: execve, execveat, fork, vfork, clone without
/// CLONE_THREAD (a new process), ptrace, process_vm_readv, process_vm_writev, socket() for
/// any family but AF_UNIX, kill/tgkill/rt_sigqueueinfo/rt_tgsigqueueinfo aimed at any
/// process but the caller's own, tkill and pidfds, ioctl(TIOCSTI), and by group (sandbox.cc,
/// refused_calls) perf events, BPF, io_uring, syslog, SysV IPC, keyrings, mounts, namespaces
/// and chroot, kernel modules, reboot and kexec, swap, accounting, setting clocks and host
/// names; clone3 gets ENOSYS (its flags cannot be inspected; the C library falls back to
/// clone). Threads stay allowed. kAllowlist (the worker's default): only the calls sandbox.cc
/// lists (allowed_calls, by group; setpriority, sched_set* and prlimit64 on the caller only)
/// are allowed besides those, and every other call answers ENOSYS. kDenylist (a diagnostic
/// for run and check): what is not named stays allowed.
/// Returns a one-line description of what is active, or false with *err when the kernel
/// refused the filter.
/// `allow_programs`: execve, fork, vfork and clone of a new process stay allowed (the Python
/// worker's Triton compiles; Landlock limits which programs, see restrict_file_writes()); the
/// programs started inherit the filter.
enum class SeccompMode { kDenylist, kAllowlist };
bool apply_worker_sandbox(std::string* description, std::string* err,
                          SeccompMode mode = SeccompMode::kAllowlist, bool allow_programs = false);

}  // namespace fp4arena
