#include "compiler/ptx_comparison.h"

#include <cctype>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// A `.file` directive's text before and after its quoted file name.
struct FileDirective {
  std::string_view head;  // e.g. "\t.file\t3 "
  std::string_view tail;  // after the closing quote (a timestamp and size, if any)
};

std::optional<FileDirective> ParseFileDirective(std::string_view line) {
  const size_t text = line.find_first_not_of(" \t");
  if (text == std::string_view::npos) return std::nullopt;
  const std::string_view keyword = line.substr(text, 6);
  if (keyword != ".file\t" && keyword != ".file ") return std::nullopt;
  const size_t open = line.find('"');
  const size_t close = line.rfind('"');
  if (open == std::string_view::npos || close == open) return std::nullopt;
  return FileDirective{line.substr(0, open), line.substr(close + 1)};
}

bool SameFileDirective(std::string_view recorded, std::string_view replayed) {
  const std::optional<FileDirective> a = ParseFileDirective(recorded);
  const std::optional<FileDirective> b = ParseFileDirective(replayed);
  return a && b && a->head == b->head && a->tail == b->tail;
}

// The next line of `text` from `at` (without its newline), advancing `at`.
std::string_view NextLine(std::string_view text, size_t& at) {
  const size_t end = text.find('\n', at);
  const std::string_view line =
      text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
  at = end == std::string_view::npos ? text.size() + 1 : end + 1;
  return line;
}

std::string_view Trimmed(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t");
  return first == std::string_view::npos ? std::string_view() : line.substr(first);
}

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// The virtual registers one function declares: `.reg .f32 %f<225>;` declares
// %f0 to %f224, `.reg .b64 %SP;` declares %SP alone. Only these may be
// renamed; `%tid.x` and the other special registers are text like any other.
class RegisterScope {
 public:
  // Which declaration `name` (e.g. "%f12") belongs to, if any: its prefix for
  // a numbered register, its whole name for a single one.
  std::optional<std::string_view> ClassOf(std::string_view name) const {
    if (singles_.contains(std::string(name))) return name;
    size_t digits = name.size();
    while (digits > 1 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
    if (digits == name.size() || (name[digits] == '0' && digits + 1 != name.size()))
      return std::nullopt;
    const std::string_view prefix = name.substr(0, digits);
    auto it = numbered_.find(std::string(prefix));
    if (it == numbered_.end()) return std::nullopt;
    uint64_t number = 0;
    for (char c : name.substr(digits)) {
      number = number * 10 + static_cast<uint64_t>(c - '0');
      if (number >= it->second) return std::nullopt;
    }
    return it->first;
  }

  // Takes the declarations of a `.reg` line both texts share.
  void Declare(std::string_view line) {
    line = Trimmed(line);
    if (!line.starts_with(".reg")) return;
    for (size_t at = line.find('%'); at != std::string_view::npos; at = line.find('%', at + 1)) {
      size_t end = at + 1;
      while (end < line.size() && IsIdentifierChar(line[end])) ++end;
      const std::string name(line.substr(at, end - at));
      if (end < line.size() && line[end] == '<') {
        uint64_t count = 0;
        for (size_t digit = end + 1; digit < line.size() && std::isdigit(line[digit]); ++digit)
          count = count * 10 + static_cast<uint64_t>(line[digit] - '0');
        numbered_[name] = count;
      } else {
        singles_.insert(name);
      }
    }
  }

  // Every function starts with no registers, and so with no renaming.
  void Clear() {
    numbered_.clear();
    singles_.clear();
    recorded_to_replayed_.clear();
    replayed_to_recorded_.clear();
  }

  // Whether `recorded` may stand for `replayed` given every pair seen so far
  // in this function; remembers the pair. `conflict` says why not.
  bool Pair(std::string_view recorded, std::string_view replayed, std::string& conflict) {
    const auto [forward, first_use] =
        recorded_to_replayed_.try_emplace(std::string(recorded), std::string(replayed));
    const auto backward =
        replayed_to_recorded_.try_emplace(std::string(replayed), std::string(recorded)).first;
    if (forward->second == replayed && backward->second == recorded) {
      renamed_count_ += first_use && recorded != replayed;
      return true;
    }
    conflict =
        forward->second != replayed
            ? fmt::format("recorded {} was {} before, here {}", recorded, forward->second, replayed)
            : fmt::format("replayed {} stood for {} before, here for {}", replayed,
                          backward->second, recorded);
    return false;
  }

  size_t renamed_count() const { return renamed_count_; }

 private:
  absl::flat_hash_map<std::string, uint64_t> numbered_;
  absl::flat_hash_set<std::string> singles_;
  absl::flat_hash_map<std::string, std::string> recorded_to_replayed_;
  absl::flat_hash_map<std::string, std::string> replayed_to_recorded_;
  size_t renamed_count_ = 0;  // over every function: never cleared
};

// A line cut at its registers: text, register, text, ..., text.
struct Tokens {
  std::vector<std::string_view> texts;
  std::vector<std::string_view> registers;
};

Tokens Tokenize(std::string_view line, const RegisterScope& scope) {
  Tokens tokens;
  size_t text_start = 0;
  for (size_t at = line.find('%'); at != std::string_view::npos; at = line.find('%', at)) {
    size_t end = at + 1;
    while (end < line.size() && IsIdentifierChar(line[end])) ++end;
    const std::string_view name = line.substr(at, end - at);
    if (scope.ClassOf(name)) {
      tokens.texts.push_back(line.substr(text_start, at - text_start));
      tokens.registers.push_back(name);
      text_start = end;
    }
    at = end;
  }
  tokens.texts.push_back(line.substr(text_start));
  return tokens;
}

bool StartsFunction(std::string_view line) {
  line = Trimmed(line);
  for (std::string_view linkage : {".visible", ".weak", ".extern", ".common"}) {
    if (line.starts_with(linkage)) line = Trimmed(line.substr(linkage.size()));
  }
  return line.starts_with(".entry") || line.starts_with(".func");
}

// Whether the two lines are the same code once the registers of `scope` are
// paired; `conflict` says which pairing broke, when one did.
bool SameCode(std::string_view recorded, std::string_view replayed, RegisterScope& scope,
              std::string& conflict) {
  const Tokens a = Tokenize(recorded, scope);
  const Tokens b = Tokenize(replayed, scope);
  if (a.texts != b.texts) return false;
  for (size_t i = 0; i < a.registers.size(); ++i) {
    if (scope.ClassOf(a.registers[i]) != scope.ClassOf(b.registers[i])) {
      conflict = fmt::format("recorded {} is not of the declaration of replayed {}", a.registers[i],
                             b.registers[i]);
      return false;
    }
    if (!scope.Pair(a.registers[i], b.registers[i], conflict)) return false;
  }
  return true;
}

std::string LineDifference(size_t line, size_t byte, std::string_view a, std::string_view b,
                           std::string_view conflict, size_t recorded_size, size_t replayed_size) {
  return fmt::format(
      "PTX differs from the recorded PTX at line {} (byte {}):\n  recorded: {}\n  replayed: "
      "{}\n  ({}{} vs {} bytes; a different Slang, NVRTC or CUDA headers than the app used?)",
      line, byte, a, b, conflict.empty() ? "" : fmt::format("{}; ", conflict), recorded_size,
      replayed_size);
}

}  // namespace

PtxComparison ComparePtx(std::string_view recorded, std::string_view replayed) {
  PtxComparison comparison;
  if (recorded == replayed) {
    comparison.verdict = PtxComparison::Verdict::kIdentical;
    return comparison;
  }
  RegisterScope scope;
  size_t line = 1, at_recorded = 0, at_replayed = 0;
  while (at_recorded <= recorded.size() && at_replayed <= replayed.size()) {
    const size_t start = at_recorded;
    const std::string_view a = NextLine(recorded, at_recorded);
    const std::string_view b = NextLine(replayed, at_replayed);
    if (StartsFunction(a)) scope.Clear();
    std::string conflict;
    if (!SameFileDirective(a, b) && !SameCode(a, b, scope, conflict)) {
      comparison.difference =
          LineDifference(line, start, a, b, conflict, recorded.size(), replayed.size());
      return comparison;
    }
    scope.Declare(a);
    ++line;
  }
  if (at_recorded > recorded.size() && at_replayed > replayed.size()) {
    comparison.renamed_registers = scope.renamed_count();
    comparison.verdict = comparison.renamed_registers == 0
                             ? PtxComparison::Verdict::kIdentical
                             : PtxComparison::Verdict::kRegistersRenamed;
    return comparison;
  }
  comparison.difference = fmt::format(
      "PTX differs from the recorded PTX after line {}: one ends there ({} vs {} bytes; a "
      "different Slang or NVRTC than the app used?)",
      line - 1, recorded.size(), replayed.size());
  return comparison;
}

std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed) {
  return ComparePtx(recorded, replayed).difference;
}

}  // namespace spreplay
