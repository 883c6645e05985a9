#include "interpose/compiler_option.h"

#include "common/replace_all.h"
#include "interpose/key_hasher.h"

namespace spreplay {

CompilerOption CompilerOption::From(const slang::CompilerOptionEntry& entry) {
  CompilerOption option;
  option.name = static_cast<int32_t>(entry.name);
  option.kind = static_cast<int32_t>(entry.value.kind);
  option.int0 = entry.value.intValue0;
  option.int1 = entry.value.intValue1;
  if (entry.value.stringValue0) option.string0 = entry.value.stringValue0;
  if (entry.value.stringValue1) option.string1 = entry.value.stringValue1;
  return option;
}

slang::CompilerOptionEntry CompilerOption::ToEntry() const {
  slang::CompilerOptionEntry entry;
  entry.name = static_cast<slang::CompilerOptionName>(name);
  entry.value.kind = static_cast<slang::CompilerOptionValueKind>(kind);
  entry.value.intValue0 = int0;
  entry.value.intValue1 = int1;
  entry.value.stringValue0 = string0.c_str();
  entry.value.stringValue1 = string1.c_str();
  return entry;
}

std::vector<CompilerOption> CopyOptions(const slang::CompilerOptionEntry* entries, size_t count) {
  std::vector<CompilerOption> options;
  options.reserve(count);
  for (size_t i = 0; i < count; ++i) options.push_back(CompilerOption::From(entries[i]));
  return options;
}

namespace {

// Hashes `text` with slangpy's directory written as "<slangpy>"; copies only
// when the directory occurs in it.
void HashWithoutSlangpyDirectory(KeyHasher& hasher, const std::string& text,
                                 const std::string& directory) {
  if (directory.empty() || text.find(directory) == std::string::npos) {
    hasher.Text(text);
    return;
  }
  std::string normalized = text;
  ReplaceAll(normalized, directory, "<slangpy>");
  hasher.Text(normalized);
}

}  // namespace

void HashKeyedOptions(KeyHasher& hasher, const std::vector<CompilerOption>& options,
                      const std::string& slangpy_directory) {
  int64_t keyed = 0;
  for (const CompilerOption& option : options) keyed += IsKeyedOption(option) ? 1 : 0;
  hasher.Integer(keyed);
  for (const CompilerOption& option : options) {
    if (!IsKeyedOption(option)) continue;
    hasher.Integer(option.name).Integer(option.kind).Integer(option.int0).Integer(option.int1);
    HashWithoutSlangpyDirectory(hasher, option.string0, slangpy_directory);
    HashWithoutSlangpyDirectory(hasher, option.string1, slangpy_directory);
  }
}

bool IsLocationOption(const CompilerOption& option) {
  switch (static_cast<slang::CompilerOptionName>(option.name)) {
    case slang::CompilerOptionName::Include:
    case slang::CompilerOptionName::DumpIntermediatePrefix:
      return true;
    default:
      return false;
  }
}

bool IsKeyedOption(const CompilerOption& option) {
  return !IsLocationOption(option) &&
         option.name != static_cast<int32_t>(slang::CompilerOptionName::UseUpToDateBinaryModule);
}

}  // namespace spreplay
