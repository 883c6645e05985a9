#pragma once
// The determinism check: does a replay give the code the app got?
//
// PTX with debug information names source files in `.file` directives by
// where the compiling machine found them, CUDA's own headers included (a
// toolkit's include directory, `targets/<arch>/include`, or CUDA from PyPI).
// Those names only label line information; the archive always holds the
// recorded PTX itself. So the replay must match it byte for byte everywhere
// else, while a `.file` directive may name another path for the same file
// number.

#include <string>
#include <string_view>

namespace spreplay {

// Empty if the two are the same code; otherwise the first differing line of each.
std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed);

}  // namespace spreplay
