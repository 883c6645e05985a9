// Patching vtables in read-only pages, and reading their protection back
// from /proc/self/maps, whatever its lines hold.

#include "interpose/vtable_patch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace spreplay {
namespace {

int ProtectionFromText(const std::string& maps, uintptr_t address) {
  std::FILE* file = fmemopen(const_cast<char*>(maps.data()), maps.size(), "r");
  EXPECT_NE(file, nullptr);
  const int protection = ProtectionInMaps(file, address);
  std::fclose(file);
  return protection;
}

TEST(VtablePatchTest, ALongPathIsNotReadAsAnAddressRange) {
  // A path that fills a 512-byte line buffer exactly where the rest of it
  // reads like a writable, executable range over every address.
  const std::string head = "1000-2000 r--p 00000000 00:00 0 /";
  const std::string path = std::string(511 - head.size(), 'p') + "0-ffffffffffffffff rwxp 0 0:0 0";
  const std::string maps = head + path +
                           "\n"
                           "5000-6000 r--p 00000000 00:00 0 /lib/libslang.so\n";
  EXPECT_EQ(ProtectionFromText(maps, 0x5800), PROT_READ);
  EXPECT_EQ(ProtectionFromText(maps, 0x1800), PROT_READ);
  EXPECT_EQ(ProtectionFromText("7000-8000 rw-p 0 0:0 0\n", 0x7000), PROT_READ | PROT_WRITE);
}

TEST(VtablePatchTest, APatchedReadOnlyPageIsReadOnlyAgain) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto** vtable = static_cast<void**>(memory);
  int original = 0, replacement = 0;
  vtable[3] = &original;
  ASSERT_EQ(mprotect(memory, page, PROT_READ), 0);  // as RELRO leaves a vtable

  VtablePatcher patcher;
  ASSERT_TRUE(patcher.Patch(vtable, 3, &replacement).ok());
  EXPECT_EQ(vtable[3], &replacement);
  EXPECT_EQ(patcher.Original(vtable, 3), &original);
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  ASSERT_NE(maps, nullptr);
  EXPECT_EQ(ProtectionInMaps(maps, reinterpret_cast<uintptr_t>(memory)), PROT_READ);
  std::fclose(maps);
  munmap(memory, page);
}

}  // namespace
}  // namespace spreplay
