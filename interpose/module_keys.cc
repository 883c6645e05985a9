#include "interpose/module_keys.h"

#include <algorithm>

#include "interpose/key_hasher.h"

namespace spreplay {

Digest IrModuleKey(std::string_view toolchain, const Digest& session, const Component& module) {
  return KeyHasher("spreplay.ir-module.v1")
      .Text(toolchain)
      .Hash(session)
      .Text(module.name)
      .Hash(module.digest)
      .Finish();
}

Digest SourceModuleLookup(std::string_view toolchain, const Digest& session, std::string_view name,
                          std::string_view path, std::string_view text) {
  return KeyHasher("spreplay.ir-source.v1")
      .Text(toolchain)
      .Hash(session)
      .Text(name)
      .Text(path)
      .Text(text)
      .Finish();
}

bool IsPseudoPath(std::string_view path) {
  return path.size() == 40 && std::all_of(path.begin(), path.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace spreplay
