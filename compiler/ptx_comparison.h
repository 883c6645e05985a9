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
//
// Slang does not always emit the same CUDA C++ for the same input: the order
// of its temporaries can change from run to run, and NVRTC then numbers the
// virtual registers of the same code differently (`%f224` for `%f223`). Such
// PTX is the recorded program with its registers renamed, so it is accepted:
// within each function, every register of the replay must stand for exactly
// one register of the recording, of the same declaration, and the other way
// round. Everything else (instructions, operands that are not registers,
// types, directives, labels, declarations) must be the same bytes. The archive
// holds the recorded PTX and the SASS built from it, never the replay's.

#include <cstddef>
#include <string>
#include <string_view>

namespace spreplay {

struct PtxComparison {
  enum class Verdict {
    kIdentical,         // the same bytes, but for `.file` paths
    kRegistersRenamed,  // the same program, its registers named differently
    kDifferent,
  };
  Verdict verdict = Verdict::kDifferent;
  size_t renamed_registers = 0;  // registers whose names differ, for kRegistersRenamed
  std::string difference;        // for kDifferent: the first differing line of each

  bool same_program() const { return verdict != Verdict::kDifferent; }
};

PtxComparison ComparePtx(std::string_view recorded, std::string_view replayed);

// Empty if the two are the same program (ComparePtx accepts them); otherwise
// the first differing line of each.
std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed);

}  // namespace spreplay
