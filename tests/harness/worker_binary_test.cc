// How fp4arena_worker is linked, read from its ELF file: a position-independent executable
// with full RELRO (GNU_RELRO, bound now), the CUDA runtime linked in statically and nothing
// of it exported, so a solution loaded into the worker finds no runtime entry to look up
// with dlsym or to redirect through a writable GOT (CMakeLists.txt says why).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

// The parts of a 64-bit little-endian ELF file this test needs.
struct ElfFacts {
  uint16_t type = 0;
  bool relro = false;     // a PT_GNU_RELRO segment
  bool bind_now = false;  // DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW
  bool pie_flag = false;  // DF_1_PIE
  std::vector<std::string> needed;
  std::vector<std::string> exported;  // defined symbols of .dynsym
};

// A NUL-terminated string at `offset` of `file`, or "" when it runs off the end.
std::string string_at(const std::string& file, uint64_t offset) {
  if (offset >= file.size()) return "";
  size_t end = file.find('\0', offset);
  return end == std::string::npos ? "" : file.substr(offset, end - offset);
}

bool read_elf(const std::string& path, ElfFacts* facts, std::string* err) {
  std::string file;
  if (!read_file(path, &file, err)) return false;
  if (file.size() < sizeof(Elf64_Ehdr) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0 ||
      file[EI_CLASS] != ELFCLASS64 || file[EI_DATA] != ELFDATA2LSB) {
    *err = path + ": not a 64-bit little-endian ELF file";
    return false;
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  facts->type = eh.e_type;
  auto fits = [&file](uint64_t offset, uint64_t size) {
    return offset <= file.size() && size <= file.size() - offset;
  };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !fits(eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr)) ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || !fits(eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr))) {
    *err = path + ": damaged headers";
    return false;
  }
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, file.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_GNU_RELRO) facts->relro = true;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), file.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sh) {
    if ((s.sh_type != SHT_DYNAMIC && s.sh_type != SHT_DYNSYM) || s.sh_link >= sh.size() ||
        !fits(s.sh_offset, s.sh_size)) {
      continue;
    }
    const uint64_t strings = sh[s.sh_link].sh_offset;
    if (s.sh_type == SHT_DYNAMIC) {
      for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= s.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        std::memcpy(&d, file.data() + s.sh_offset + off, sizeof d);
        if (d.d_tag == DT_NEEDED) facts->needed.push_back(string_at(file, strings + d.d_un.d_val));
        if (d.d_tag == DT_BIND_NOW) facts->bind_now = true;
        if (d.d_tag == DT_FLAGS && (d.d_un.d_val & DF_BIND_NOW)) facts->bind_now = true;
        if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_NOW)) facts->bind_now = true;
        if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_PIE)) facts->pie_flag = true;
      }
    } else {
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, file.data() + s.sh_offset + off, sizeof sym);
        if (sym.st_shndx != SHN_UNDEF && sym.st_name != 0) {
          facts->exported.push_back(string_at(file, strings + sym.st_name));
        }
      }
    }
  }
  return true;
}

TEST(WorkerBinary, FullRelroPieAndAPrivateStaticCudaRuntime) {
  ElfFacts f;
  std::string err;
  ASSERT_TRUE(read_elf(testing_util::worker_bin(), &f, &err)) << err;
  EXPECT_EQ(f.type, ET_DYN) << "a position-independent executable";
  EXPECT_TRUE(f.pie_flag);
  EXPECT_TRUE(f.relro) << "no PT_GNU_RELRO segment";
  EXPECT_TRUE(f.bind_now) << "RELRO without BIND_NOW leaves the lazy GOT writable";
  for (const std::string& lib : f.needed) {
    EXPECT_NE(lib.rfind("libcudart", 0), 0u) << "the CUDA runtime must be linked statically";
  }
  for (const std::string& sym : f.exported) {
    EXPECT_NE(sym.rfind("cuda", 0), 0u) << sym << " is exported";
    EXPECT_NE(sym.rfind("__cuda", 0), 0u) << sym << " is exported";
  }
}

TEST(WorkerBinary, TheElfReaderSeesWhatItChecks) {
  // The judge itself is linked the ordinary way (dynamic CUDA runtime, lazy binding as the
  // toolchain chooses): the reader must tell the two apart, or the test above proves nothing.
  ElfFacts f;
  std::string err;
  ASSERT_TRUE(read_elf(testing_util::run_challenge_bin(), &f, &err)) << err;
  bool cudart = false;
  for (const std::string& lib : f.needed) cudart = cudart || lib.rfind("libcudart.so", 0) == 0;
  EXPECT_TRUE(cudart) << "run_challenge should need libcudart.so";
  EXPECT_FALSE(read_elf(testing_util::source_dir() + "/CMakeLists.txt", &f, &err));
}

}  // namespace
}  // namespace fp4arena
