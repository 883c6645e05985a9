#include "replayer/tree_diff.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

std::string Label(const Component& node) {
  if (node.name.empty()) return KindName(node.kind);
  return fmt::format("{} '{}'", KindName(node.kind), node.name);
}

std::string Short(const Digest& digest) { return digest.ToHex().substr(0, 12); }

// What differs between two module descriptions with different digests.
std::string ModuleDifferences(const Component& recorded, const Component& rebuilt) {
  std::vector<std::string> notes;
  if (recorded.name != rebuilt.name)
    notes.push_back(fmt::format("named '{}', recorded '{}'", rebuilt.name, recorded.name));
  if (recorded.source != rebuilt.source) notes.push_back("its source text differs");
  absl::flat_hash_map<std::string, Digest> recorded_files;
  for (const SourceFile& file : recorded.dependencies) recorded_files[file.path] = file.content;
  absl::flat_hash_map<std::string, Digest> rebuilt_files;
  for (const SourceFile& file : rebuilt.dependencies) rebuilt_files[file.path] = file.content;
  for (const auto& [path, content] : recorded_files) {
    auto it = rebuilt_files.find(path);
    if (it == rebuilt_files.end()) {
      notes.push_back(fmt::format("did not read {}", path));
    } else if (it->second != content) {
      notes.push_back(fmt::format("read {} with content {}, recorded {}", path, Short(it->second),
                                  Short(content)));
    }
  }
  for (const auto& [path, content] : rebuilt_files) {
    if (!recorded_files.contains(path)) notes.push_back(fmt::format("also read {}", path));
  }
  std::string text;
  for (const std::string& note : notes) text += "; " + note;
  return text;
}

absl::Status Compare(const Component& recorded, const Component& rebuilt,
                     const std::string& place) {
  if (recorded.digest == rebuilt.digest) return absl::OkStatus();
  const std::string here = place.empty() ? Label(recorded) : place + " > " + Label(recorded);
  if (recorded.kind == rebuilt.kind && recorded.children.size() == rebuilt.children.size()) {
    for (size_t i = 0; i < recorded.children.size(); ++i) {
      const std::string child_place =
          recorded.children.size() > 1 ? fmt::format("{} [{}]", here, i) : here;
      absl::Status status = Compare(*recorded.children[i], *rebuilt.children[i], child_place);
      if (!status.ok()) return status;
    }
  }
  const std::string details =
      recorded.kind == Component::Kind::kModule && rebuilt.kind == Component::Kind::kModule
          ? ModuleDifferences(recorded, rebuilt)
          : "";
  return absl::FailedPreconditionError(fmt::format(
      "the replay built other content than was recorded at {}: digest {}, recorded {}{}", here,
      Short(rebuilt.digest), Short(recorded.digest), details));
}

}  // namespace

absl::Status CheckSameContent(const ComponentPtr& recorded, const ComponentPtr& rebuilt) {
  return Compare(*recorded, *rebuilt, "");
}

}  // namespace spreplay
