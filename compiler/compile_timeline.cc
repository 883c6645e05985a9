#include "compiler/compile_timeline.h"

#include <algorithm>

namespace spreplay {

CompileTimeline::Scope::Scope(CompileTimeline& timeline, std::string_view stage, std::string label,
                              size_t worker)
    : timeline_(timeline) {
  span_.stage = stage;
  span_.label = std::move(label);
  span_.worker = worker;
  span_.start_seconds = timeline_.SecondsSinceOrigin();
}

CompileTimeline::Scope::~Scope() {
  span_.end_seconds = timeline_.SecondsSinceOrigin();
  timeline_.Add(std::move(span_));
}

double CompileTimeline::SecondsSinceOrigin() const {
  return std::chrono::duration<double>(Clock::now() - origin_).count();
}

void CompileTimeline::Add(TimelineSpan span) {
  std::lock_guard lock(mutex_);
  spans_.push_back(std::move(span));
}

std::vector<TimelineSpan> CompileTimeline::Spans() const {
  std::vector<TimelineSpan> spans;
  {
    std::lock_guard lock(mutex_);
    spans = spans_;
  }
  std::stable_sort(spans.begin(), spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
    return a.start_seconds < b.start_seconds;
  });
  return spans;
}

}  // namespace spreplay
