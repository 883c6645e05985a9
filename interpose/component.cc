#include "interpose/component.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/replace_all.h"
#include "fmt/format.h"
#include "interpose/key_hasher.h"

namespace spreplay {
namespace {

std::shared_ptr<Component> Make(Component::Kind kind) {
  auto component = std::make_shared<Component>();
  component->kind = kind;
  return component;
}

bool AllKeyable(const std::vector<ComponentPtr>& children) {
  return std::all_of(children.begin(), children.end(),
                     [](const ComponentPtr& child) { return child && child->keyable; });
}

void HashChildren(KeyHasher& hasher, const std::vector<ComponentPtr>& children) {
  hasher.Integer(static_cast<int64_t>(children.size()));
  for (const ComponentPtr& child : children) hasher.Hash(child->digest);
}

// Whether a module's name is one slangpy derives from the module's text (a
// hex SHA-256 or its first 16 digits), which keys may therefore ignore.
bool IsDerivedModuleName(std::string_view name) {
  // slangpy: sha256(text) in hex for call sites, its first 16 digits for raw dispatches.
  if (name.size() != 64 && name.size() != 16) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Each file by the part of its path that tells it apart from the others,
// and its content: swapping two files' contents changes the key, moving the
// app or its virtualenv does not. Sorted by that name, since Slang lists
// files in the order it happened to load them.
void HashFiles(KeyHasher& hasher, const std::vector<SourceFile>& files) {
  std::vector<std::pair<std::string_view, Digest>> keyed;
  const std::vector<std::string_view> names = DistinguishingPathSuffixes(files);
  for (size_t i = 0; i < files.size(); ++i) keyed.emplace_back(names[i], files[i].content);
  std::sort(keyed.begin(), keyed.end());
  keyed.erase(std::unique(keyed.begin(), keyed.end()), keyed.end());
  hasher.Integer(static_cast<int64_t>(keyed.size()));
  for (const auto& [name, content] : keyed) hasher.Text(name).Hash(content);
}

// The name a file module is keyed by. Slang names a module after the request
// that first loads it: loadModule("slangpy.slang") makes "slangpy.slang",
// while `import slangpy;` in a module loaded earlier makes "slangpy". Both
// are the same file and give the same code, so the name must not decide the
// key: which request came first is load order, not content. Paths are keyed
// by the content of the file they name (NormalizeSourceText).
std::string FileModuleKeyName(const std::string& name,
                              const std::vector<SourceFile>& dependencies) {
  return std::string(WithoutSlangExtension(NormalizeSourceText(name, dependencies)));
}

}  // namespace

std::string_view WithoutSlangExtension(std::string_view path) {
  constexpr std::string_view kExtension = ".slang";
  return path.ends_with(kExtension) ? path.substr(0, path.size() - kExtension.size()) : path;
}

ComponentPtr WithChildren(const Component& node, std::vector<ComponentPtr> children) {
  switch (node.kind) {
    case Component::Kind::kEntryPoint:
      return Component::EntryPoint(children.at(0), node.name, node.stage);
    case Component::Kind::kComposite:
      return Component::Composite(std::move(children));
    case Component::Kind::kLinked:
      return Component::Linked(children.at(0), node.link_options);
    case Component::Kind::kRenamed:
      return Component::Renamed(children.at(0), node.name);
    case Component::Kind::kSpecialized:
      return Component::Specialized(children.at(0), node.specialization_args);
    case Component::Kind::kModule:
    case Component::Kind::kTypeConformance:
    case Component::Kind::kOpaque:
      break;
  }
  return std::make_shared<Component>(node);  // a leaf: no children to replace
}

void ForEachDistinctNode(const ComponentPtr& root,
                         const std::function<void(const Component&)>& visit) {
  absl::flat_hash_set<const Component*> seen;
  std::vector<const Component*> pending;
  if (root) pending.push_back(root.get());
  while (!pending.empty()) {
    const Component* node = pending.back();
    pending.pop_back();
    if (!seen.insert(node).second) continue;
    visit(*node);
    // Reversed, so that children are visited in their order.
    for (auto child = node->children.rbegin(); child != node->children.rend(); ++child) {
      if (*child) pending.push_back(child->get());
    }
  }
}

bool HasTypeConformance(const ComponentPtr& program) {
  bool found = false;
  ForEachDistinctNode(program, [&](const Component& node) {
    found = found || node.kind == Component::Kind::kTypeConformance;
  });
  return found;
}

const char* KindName(Component::Kind kind) {
  switch (kind) {
    case Component::Kind::kModule:
      return "module";
    case Component::Kind::kEntryPoint:
      return "entry-point";
    case Component::Kind::kTypeConformance:
      return "type-conformance";
    case Component::Kind::kComposite:
      return "composite";
    case Component::Kind::kLinked:
      return "linked";
    case Component::Kind::kRenamed:
      return "renamed";
    case Component::Kind::kSpecialized:
      return "specialized";
    case Component::Kind::kOpaque:
      return "opaque";
  }
  return "?";
}

std::vector<std::string_view> DistinguishingPathSuffixes(const std::vector<SourceFile>& files) {
  // Where each path's suffix of `parts` components starts; 0 once it is whole.
  auto suffix_start = [](std::string_view path, size_t parts) -> size_t {
    size_t start = path.size();
    for (size_t i = 0; i < parts; ++i) {
      const size_t slash = start == 0 ? std::string_view::npos : path.rfind('/', start - 1);
      if (slash == std::string_view::npos) return 0;
      start = slash;
    }
    return start + 1;
  };
  auto suffix = [&](std::string_view path, size_t parts) {
    return path.substr(suffix_start(path, parts));
  };
  std::vector<std::string_view> names;
  names.reserve(files.size());
  for (const SourceFile& file : files) {
    const std::string_view path = file.path;
    size_t parts = 1;
    while (suffix_start(path, parts) > 0 &&
           std::any_of(files.begin(), files.end(), [&](const SourceFile& other) {
             return other.path != path && suffix(other.path, parts) == suffix(path, parts);
           })) {
      ++parts;
    }
    names.push_back(suffix(path, parts));
  }
  return names;
}

std::vector<SourceFile> DeclaringFiles(const Component& declaring_module) {
  std::vector<SourceFile> files = declaring_module.dependencies;
  if (declaring_module.source) files.push_back({declaring_module.path, declaring_module.digest});
  return files;
}

std::string NormalizeSourceText(const std::string& text,
                                const std::vector<SourceFile>& dependencies) {
  // Longest paths first, so that "/a/b.slang" is not half-replaced via "/a/b".
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const SourceFile& file : dependencies) {
    if (file.path.empty()) continue;
    std::string token = "<dependency " + file.content.ToHex() + ">";
    replacements.emplace_back(file.path, token);
    if (const std::string_view stem = WithoutSlangExtension(file.path); stem != file.path)
      replacements.emplace_back(std::string(stem), token);
  }
  std::sort(replacements.begin(), replacements.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string normalized = text;
  for (const auto& [from, to] : replacements) ReplaceAll(normalized, from, to);
  return normalized;
}

ComponentPtr Component::Module(std::string name, std::string path, std::string requested_name,
                               std::optional<std::string> source,
                               std::vector<SourceFile> dependencies) {
  auto module = Make(Kind::kModule);
  KeyHasher hasher("spreplay.module.v4");
  hasher.Integer(source.has_value());
  if (source) {
    // slangpy names a wrapper module after a hash of its text, and that text
    // names imported modules by path: both change when the app moves while
    // the code does not. Such a name is derived from the text, so the text,
    // with paths and the name normalized, is the identity. Any other name is
    // the app's own and is keyed as it is.
    std::string text = NormalizeSourceText(*source, dependencies);
    if (IsDerivedModuleName(name)) {
      ReplaceAll(text, name, "<this module>");
    } else {
      hasher.Text(name);
    }
    hasher.Text(text);
  } else {
    hasher.Text(FileModuleKeyName(name, dependencies));
  }
  std::vector<SourceFile> keyed_files;
  for (const SourceFile& file : dependencies) {
    if (path.empty() || file.path != path || !source) keyed_files.push_back(file);
  }
  HashFiles(hasher, keyed_files);
  module->name = std::move(name);
  module->path = std::move(path);
  module->requested_name = std::move(requested_name);
  module->source = std::move(source);
  module->dependencies = std::move(dependencies);
  module->digest = hasher.Finish();
  module->keyable = true;
  return module;
}

ComponentPtr Component::EntryPoint(ComponentPtr module, std::string function_name, int32_t stage) {
  auto entry = Make(Kind::kEntryPoint);
  entry->digest = KeyHasher("spreplay.entry-point.v1")
                      .Hash(module->digest)
                      .Text(function_name)
                      .Integer(stage)
                      .Finish();
  entry->stage = stage;
  entry->keyable = module->keyable;
  entry->name = std::move(function_name);
  entry->children.push_back(std::move(module));
  return entry;
}

ComponentPtr Component::TypeConformance(std::string type_name, std::string interface_name,
                                        int64_t id, std::vector<SourceFile> declaring_files) {
  auto conformance = Make(Kind::kTypeConformance);
  // The type's code comes from the module that declares it, which the rest
  // of the program need not import.
  KeyHasher hasher("spreplay.type-conformance.v2");
  hasher.Text(type_name).Text(interface_name).Integer(id);
  HashFiles(hasher, declaring_files);
  conformance->digest = hasher.Finish();
  // An automatic id (-1) is keyable only once resolved to the id Slang assigned.
  conformance->keyable = id >= 0;
  conformance->name = std::move(type_name);
  conformance->interface_name = std::move(interface_name);
  conformance->conformance_id = id;
  conformance->dependencies = std::move(declaring_files);
  return conformance;
}

ComponentPtr Component::Composite(std::vector<ComponentPtr> children) {
  auto composite = Make(Kind::kComposite);
  KeyHasher hasher("spreplay.composite.v1");
  HashChildren(hasher, children);
  composite->digest = hasher.Finish();
  composite->keyable = AllKeyable(children);
  composite->children = std::move(children);
  return composite;
}

ComponentPtr Component::Linked(ComponentPtr program, std::vector<CompilerOption> options) {
  auto linked = Make(Kind::kLinked);
  KeyHasher hasher("spreplay.linked.v1");
  hasher.Hash(program->digest);
  HashKeyedOptions(hasher, options, "");
  linked->digest = hasher.Finish();
  linked->keyable = program->keyable;
  linked->children.push_back(std::move(program));
  linked->link_options = std::move(options);
  return linked;
}

ComponentPtr Component::Renamed(ComponentPtr entry_point, std::string new_name) {
  auto renamed = Make(Kind::kRenamed);
  renamed->digest =
      KeyHasher("spreplay.renamed.v1").Hash(entry_point->digest).Text(new_name).Finish();
  renamed->keyable = entry_point->keyable;
  renamed->name = std::move(new_name);
  renamed->children.push_back(std::move(entry_point));
  return renamed;
}

ComponentPtr Component::Specialized(ComponentPtr component, std::vector<std::string> arguments) {
  auto specialized = Make(Kind::kSpecialized);
  // Type names are resolved in the program's modules, whose content is keyed.
  KeyHasher hasher("spreplay.specialized.v1");
  hasher.Hash(component->digest).Integer(static_cast<int64_t>(arguments.size()));
  for (const std::string& argument : arguments) hasher.Text(argument);
  specialized->digest = hasher.Finish();
  specialized->keyable = component->keyable;
  specialized->specialization_args = std::move(arguments);
  specialized->children.push_back(std::move(component));
  return specialized;
}

ComponentPtr Component::Opaque(std::string reason) {
  auto opaque = Make(Kind::kOpaque);
  opaque->opaque_reason = std::move(reason);
  return opaque;
}

std::string NotKeyableReason(const ComponentPtr& program) {
  if (!program) return "spreplay never saw its program being made";
  std::string reason;
  ForEachDistinctNode(program, [&](const Component& node) {
    if (!reason.empty()) return;
    if (node.kind == Component::Kind::kOpaque) reason = node.opaque_reason;
    if (node.kind == Component::Kind::kTypeConformance && node.conformance_id < 0) {
      reason =
          fmt::format("type conformance {} : {} has an automatic id, and Slang would not say which",
                      node.name, node.interface_name);
    }
  });
  return reason.empty() && !program->keyable ? "part of it was made out of sight of spreplay"
                                             : reason;
}

ComponentPtr RebuildTree(const ComponentPtr& root,
                         const std::function<ComponentPtr(const ComponentPtr&)>& replace) {
  absl::flat_hash_map<const Component*, ComponentPtr> rebuilt;
  std::function<ComponentPtr(const ComponentPtr&)> visit = [&](const ComponentPtr& node) {
    if (!node) return node;
    if (auto it = rebuilt.find(node.get()); it != rebuilt.end()) return it->second;
    ComponentPtr result = replace(node);
    if (!result) {
      std::vector<ComponentPtr> children;
      bool changed = false;
      for (const ComponentPtr& child : node->children) {
        children.push_back(visit(child));
        changed = changed || children.back() != child;
      }
      result = changed ? WithChildren(*node, std::move(children)) : node;
    }
    rebuilt.emplace(node.get(), result);
    return result;
  };
  return visit(root);
}

Digest KernelKey(const KernelKeyInputs& inputs) {
  return KeyHasher("spreplay.kernel.v1")
      .Text(inputs.toolchain)
      .Hash(inputs.session)
      .Hash(inputs.program)
      .Integer(inputs.entry_point_index)
      .Integer(inputs.target_index)
      .Finish();
}

}  // namespace spreplay
