// The worker's sandbox: after CUDA is initialised and before the solution is loaded, a
// seccomp filter makes the process unable to start programs or processes, trace or read
// other processes, or open network sockets. Raw seccomp BPF (no library), x86-64 and
// aarch64.
#pragma once

#include <string>

namespace fp4arena {

/// Installs the filter (and PR_SET_NO_NEW_PRIVS) on the calling process and all threads it
/// starts later. Refused with EPERM: execve, execveat, fork, vfork, clone without
/// CLONE_THREAD (a new process), ptrace, process_vm_readv, process_vm_writev, and socket()
/// for any family but AF_UNIX; clone3 gets ENOSYS (its flags cannot be inspected; the C
/// library falls back to clone). Threads stay allowed. Returns a one-line description of
/// what is active, or false with *err when the kernel refused the filter.
bool apply_worker_sandbox(std::string* description, std::string* err);

}  // namespace fp4arena
