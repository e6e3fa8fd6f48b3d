#include "harness/sandbox.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fp4arena {
namespace {

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

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

}  // namespace

bool apply_worker_sandbox(std::string* description, std::string* err) {
  if (kArch == 0) {
    *description = "none (no seccomp filter for this architecture)";
    return true;
  }
  const uint32_t kErrno = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  const uint32_t kNoSys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
  std::vector<sock_filter> f;
  // Another architecture's system call numbers mean nothing here: kill.
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArchOff));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kNr));
  // Plain refusals.
  std::vector<long> refused = {SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv,
                               SYS_process_vm_writev};
#ifdef SYS_fork
  refused.push_back(SYS_fork);
#endif
#ifdef SYS_vfork
  refused.push_back(SYS_vfork);
#endif
  for (long nr : refused) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, kErrno));
  }
#ifdef SYS_clone3
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone3), 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kNoSys));
#endif
  // clone: threads (CLONE_THREAD) only.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone), 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg0));
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(stmt(BPF_RET | BPF_K, kErrno));
  // socket: AF_UNIX only.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_socket), 0, 4));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArg0));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(stmt(BPF_RET | BPF_K, kErrno));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));

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
  *description =
      "seccomp: no exec, fork or new processes, ptrace, process_vm_*, or non-AF_UNIX sockets";
  return true;
}

}  // namespace fp4arena
