#pragma once
// Explains where two PTX texts first differ, for the determinism check.

#include <string>
#include <string_view>

namespace spreplay {

// Empty if identical; otherwise the first differing line of each.
std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed);

}  // namespace spreplay
