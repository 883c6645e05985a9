#pragma once
// Renders a trace for people (`spreplay inspect TRACE`).

#include <string>

#include "recorder/trace_reader.h"

namespace spreplay {

std::string DescribeTrace(const Trace& trace);
// Every record but file contents and kernel code, for scripts.
std::string DescribeTraceJson(const Trace& trace);

}  // namespace spreplay
