// Cheat machinery shared by the fixtures that patch the worker at load time (from a
// constructor in the solution's shared object): find a function of the worker's executable in
// its ELF symbol table (the file read through /proc/self/exe) and overwrite its first
// instructions with a jump to a function of the fixture's own.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace worker_patch {

inline int main_program_base(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name && info->dlpi_name[0] != '\0') return 0;
  *static_cast<uintptr_t*>(out) = info->dlpi_addr;
  return 1;
}

// The run-time address of the function `name` in the main program, from the symbol table of
// its file, or 0. With `prefix`, the first function whose name starts with `name` (a C++
// function's mangled name up to its parameter types), never a split-off part of one.
inline uintptr_t main_program_function(const char* name, bool prefix = false) {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  std::vector<char> file(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < file.size()) {
    ssize_t n = read(fd, file.data() + got, file.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got != file.size() || file.size() < sizeof(ElfW(Ehdr))) return 0;
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(file.data());
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
      eh->e_shoff + eh->e_shnum * sizeof(ElfW(Shdr)) > file.size()) {
    return 0;
  }
  const auto* sh = reinterpret_cast<const ElfW(Shdr)*>(file.data() + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const ElfW(Shdr)& strtab = sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > file.size() ||
        strtab.sh_offset + strtab.sh_size > file.size()) {
      continue;
    }
    const auto* syms = reinterpret_cast<const ElfW(Sym)*>(file.data() + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(ElfW(Sym)); ++k) {
      if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0 ||
          syms[k].st_name >= strtab.sh_size) {
        continue;
      }
      const char* sym_name = file.data() + strtab.sh_offset + syms[k].st_name;
      const size_t room = strtab.sh_size - syms[k].st_name;
      if (std::strncmp(sym_name, name, prefix ? std::min(room, std::strlen(name)) : room) != 0) {
        continue;
      }
      // A compiler-split part of a function (name.cold, name.part.0) is not its entry.
      if (prefix && std::memchr(sym_name, '.', strnlen(sym_name, room)) != nullptr) continue;
      uintptr_t base = 0;
      dl_iterate_phdr(main_program_base, &base);
      return base + syms[k].st_value;
    }
  }
  return 0;
}

// Overwrites the first instructions at `at` with a jump to `to`.
inline bool write_jump(uintptr_t at, const void* to) {
  unsigned char code[16];
  size_t size = 0;
  const uint64_t target = reinterpret_cast<uintptr_t>(to);
#if defined(__x86_64__)
  code[0] = 0x48;  // movabs rax, target
  code[1] = 0xB8;
  std::memcpy(code + 2, &target, 8);
  code[10] = 0xFF;  // jmp rax
  code[11] = 0xE0;
  size = 12;
#elif defined(__aarch64__)
  const uint32_t ldr_x16 = 0x58000050;  // ldr x16, #8
  const uint32_t br_x16 = 0xD61F0200;   // br x16
  std::memcpy(code, &ldr_x16, 4);
  std::memcpy(code + 4, &br_x16, 4);
  std::memcpy(code + 8, &target, 8);
  size = 16;
#else
  return false;
#endif
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = at & ~(page - 1), hi = (at + size + page - 1) & ~(page - 1);
  void* region = reinterpret_cast<void*>(lo);
  if (mprotect(region, hi - lo, PROT_READ | PROT_WRITE) != 0) return false;
  std::memcpy(reinterpret_cast<void*>(at), code, size);
  bool ok = mprotect(region, hi - lo, PROT_READ | PROT_EXEC) == 0;
  __builtin___clear_cache(reinterpret_cast<char*>(at), reinterpret_cast<char*>(at + size));
  return ok;
}

}  // namespace worker_patch
