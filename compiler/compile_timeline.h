#pragma once
// Which job of a compile ran when, and on which worker: the compile's
// profile, in its JSON report. It shows where the wall time goes (a stage
// that runs alone, a worker idle while another finishes a long job) where
// per-kernel sums cannot.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace spreplay {

struct TimelineSpan {
  std::string stage;  // "replay", "sass", "pack", "serialize", "rebuild"
  std::string label;  // the kernel, or the module session's part
  size_t worker = 0;
  double start_seconds = 0;  // since the compile started
  double end_seconds = 0;
};

// Thread-safe: workers add their spans as they finish.
class CompileTimeline {
 public:
  using Clock = std::chrono::steady_clock;

  // A job under way; its span is added when the scope ends.
  class Scope {
   public:
    Scope(CompileTimeline& timeline, std::string_view stage, std::string label, size_t worker);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CompileTimeline& timeline_;
    TimelineSpan span_;
  };

  explicit CompileTimeline(Clock::time_point origin) : origin_(origin) {}

  // Every span so far, by start time.
  std::vector<TimelineSpan> Spans() const;

 private:
  double SecondsSinceOrigin() const;
  void Add(TimelineSpan span);

  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<TimelineSpan> spans_;
};

}  // namespace spreplay
