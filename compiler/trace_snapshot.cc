#include "compiler/trace_snapshot.h"

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(const Trace& trace) : trace_(trace) {}

  absl::Status Visit(const ComponentPtr& node) {
    if (!visited_.insert(node->digest).second) return absl::OkStatus();
    if (absl::Status status = VisitFiles(*node); !status.ok()) return status;
    for (const ComponentPtr& child : node->children) {
      if (absl::Status status = Visit(child); !status.ok()) return status;
    }
    return absl::OkStatus();
  }

  Snapshot Take() { return std::move(snapshot_); }

 private:
  absl::Status VisitFiles(const Component& node) {
    for (const SourceFile& file : node.dependencies) {
      if (const std::string_view* bytes = trace_.FindSource(file.content)) {
        snapshot_.AddFile(file.path, std::string(*bytes));
        continue;
      }
      // Not a file: a module loaded from a string, named by its digest.
      absl::StatusOr<ComponentPtr> module = trace_.FindComponent(file.content);
      if (!module.ok() || (*module)->kind != Component::Kind::kModule || !(*module)->source) {
        return absl::NotFoundError(fmt::format("the trace has no copy of {} ({}), which {} read",
                                               file.path, file.content.ToHex().substr(0, 16),
                                               node.name));
      }
      if (!visited_.insert((*module)->digest).second) continue;
      snapshot_.string_modules.push_back(*module);
      if (absl::Status status = VisitFiles(**module); !status.ok()) return status;
    }
    return absl::OkStatus();
  }

  const Trace& trace_;
  Snapshot snapshot_;
  absl::flat_hash_set<Digest> visited_;
};

}  // namespace

absl::StatusOr<Snapshot> SnapshotFor(const Trace& trace, const ComponentPtr& program) {
  SnapshotBuilder builder(trace);
  if (absl::Status status = builder.Visit(program); !status.ok()) return status;
  return builder.Take();
}

}  // namespace spreplay
