#pragma once
// Renders a trace for people (`spreplay inspect TRACE`).

#include <string>

#include "recorder/trace_reader.h"

namespace spreplay {

std::string DescribeTrace(const Trace& trace);

}  // namespace spreplay
