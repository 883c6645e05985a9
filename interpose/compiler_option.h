#pragma once
// A Slang compiler option held by value. slang::CompilerOptionEntry points into
// memory the caller owns only for the duration of a call.

#include <cstdint>
#include <string>
#include <vector>

#include "slang.h"

namespace spreplay {

struct CompilerOption {
  int32_t name = 0;  // slang::CompilerOptionName
  int32_t kind = 0;  // slang::CompilerOptionValueKind
  int32_t int0 = 0;
  int32_t int1 = 0;
  std::string string0;
  std::string string1;

  static CompilerOption From(const slang::CompilerOptionEntry& entry);
  slang::CompilerOptionEntry ToEntry() const;  // borrows this object's strings
  bool operator==(const CompilerOption&) const = default;
};

std::vector<CompilerOption> CopyOptions(const slang::CompilerOptionEntry* entries, size_t count);

// Options whose value is a filesystem location. They decide where Slang looks,
// not what it compiles: the content of whatever it found is keyed instead, so a
// relocated install still hits.
bool IsLocationOption(const CompilerOption& option);

// Whether an option takes part in keys: neither a location nor
// UseUpToDateBinaryModule, which slangpy sets on devices with a
// module_cache_path. That one only lets Slang load modules it serialized
// before, after checking them against their sources, so it decides how fast
// the front end runs, never what it produces.
bool IsKeyedOption(const CompilerOption& option);

class KeyHasher;

// Feeds every option but the location options into a key. Strings naming
// `slangpy_directory` name it "<slangpy>": what lies there is fixed by the
// slangpy version, which every key holds.
void HashKeyedOptions(KeyHasher& hasher, const std::vector<CompilerOption>& options,
                      const std::string& slangpy_directory);

}  // namespace spreplay
