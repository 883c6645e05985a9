#pragma once
// The content of a Slang component (module, entry point, composite, linked
// program, ...) as far as it decides the code Slang generates for it.
//
// The runtime builds these trees from live Slang objects through its hooks;
// the compiler builds the same trees from a trace. Both derive kernel keys
// from them with the same code, which is what makes an archive built offline
// hit at run time, and miss whenever anything the kernel depends on changed.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/sha256.h"
#include "interpose/compiler_option.h"

namespace spreplay {

struct SourceFile {
  std::string path;  // where Slang read it; recorded for replay, never keyed
  Digest content;
};

struct Component;
inline constexpr int32_t kFoundByName = -1;
using ComponentPtr = std::shared_ptr<const Component>;

struct Component {
  enum class Kind : uint8_t {
    kModule,
    kEntryPoint,
    kTypeConformance,
    kComposite,
    kLinked,
    kRenamed,
    kSpecialized,
    kOpaque,  // never keyed: made out of sight of the hooks, or unreadable (opaque_reason)
  };

  Kind kind = Kind::kOpaque;
  // kModule: the module name; kEntryPoint: the function; kRenamed: the new name;
  // kTypeConformance: the conforming type.
  std::string name;
  // kModule loaded from a string: the text exactly as Slang received it.
  std::optional<std::string> source;
  // kModule: the path given to or reported by Slang (replay only).
  std::string path;
  // kModule loaded by ISession::loadModule: the name it was asked for, which
  // sgl resolves to a path (replay only).
  std::string requested_name;
  // kModule: every file Slang read for it, including imported modules.
  // kTypeConformance: those of the modules that declare the type.
  std::vector<SourceFile> dependencies;
  // kEntryPoint: the stage passed to findAndCheckEntryPoint, or kFoundByName.
  int32_t stage = -1;
  // kTypeConformance
  std::string interface_name;
  int64_t conformance_id = -1;
  // kLinked
  std::vector<CompilerOption> link_options;
  // kSpecialized: each argument of IComponentType::specialize, "type <full
  // name>" or "expr <Slang text>".
  std::vector<std::string> specialization_args;
  // kOpaque: why spreplay cannot key it, for miss messages.
  std::string opaque_reason;
  std::vector<ComponentPtr> children;

  Digest digest;  // content identity, computed by the factories below
  // False if any part of the tree is opaque, or a type conformance whose
  // automatic id is not resolved yet.
  bool keyable = false;

  static ComponentPtr Module(std::string name, std::string path, std::string requested_name,
                             std::optional<std::string> source,
                             std::vector<SourceFile> dependencies);
  static ComponentPtr EntryPoint(ComponentPtr module, std::string function_name, int32_t stage);
  // `declaring_files`: DeclaringFiles of the module that declares the type
  // (none for a type of Slang's core module).
  static ComponentPtr TypeConformance(std::string type_name, std::string interface_name, int64_t id,
                                      std::vector<SourceFile> declaring_files);
  static ComponentPtr Composite(std::vector<ComponentPtr> children);
  static ComponentPtr Linked(ComponentPtr program, std::vector<CompilerOption> options);
  static ComponentPtr Renamed(ComponentPtr entry_point, std::string new_name);
  static ComponentPtr Specialized(ComponentPtr component, std::vector<std::string> arguments);
  // `reason` completes "not keyable: ...", e.g. "it was made by X, which ...".
  static ComponentPtr Opaque(std::string reason);
};

const char* KindName(Component::Kind kind);

// Calls `visit` once for every distinct node under `root`, parents first.
// Programs share nodes (a wrapper module is a child of both the composite and
// the entry point), so a plain recursive walk sees some of them twice.
void ForEachDistinctNode(const ComponentPtr& root,
                         const std::function<void(const Component&)>& visit);

// `node` made again over `children` (same kind and fields, new digest).
ComponentPtr WithChildren(const Component& node, std::vector<ComponentPtr> children);

// `root` with every node for which `replace` returns non-null replaced by
// what it returns, and every ancestor of a replaced node made again: digests
// are computed bottom-up. Shared nodes stay shared.
ComponentPtr RebuildTree(const ComponentPtr& root,
                         const std::function<ComponentPtr(const ComponentPtr&)>& replace);

// Whether any part of `program` is a type conformance, which dynamic dispatch
// numbers from a counter in the Slang session.
bool HasTypeConformance(const ComponentPtr& program);

// Why `program` cannot be keyed: the reason of its first opaque part ("" if
// it is keyable).
std::string NotKeyableReason(const ComponentPtr& program);

// `path` without a trailing ".slang": Slang finds "a.slang" for `import a;`
// and names the module "a".
std::string_view WithoutSlangExtension(std::string_view path);

// For each of `files`, the shortest trailing part of its path (whole
// components: "tensor.slang", "slang/tensor.slang") that no other file's path
// ends with. Keys name files by these: they survive an app or virtualenv
// moved elsewhere, and tell apart files with equal contents.
std::vector<std::string_view> DistinguishingPathSuffixes(const std::vector<SourceFile>& files);

// What a type conformance is keyed with for the module declaring its type:
// the module's files, and a string module's own text as its pseudo path and
// digest (as the modules importing it list it).
std::vector<SourceFile> DeclaringFiles(const Component& declaring_module);

// Replaces every mention of a dependency's path in module source text by the
// digest of that file's content: slangpy writes the path of a module imported
// by absolute path into its wrapper, and the key must not change when the
// same file is installed elsewhere.
std::string NormalizeSourceText(const std::string& text,
                                const std::vector<SourceFile>& dependencies);

// The identity of a kernel: one entry point of a linked program, compiled for
// one target of one session, by one toolchain.
struct KernelKeyInputs {
  std::string toolchain;  // Slang build tag and slangpy version
  Digest session;         // SessionConfig::ContentDigest()
  Digest program;         // Component::digest of the linked program
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
};
Digest KernelKey(const KernelKeyInputs& inputs);

}  // namespace spreplay
