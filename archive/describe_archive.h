// What `spreplay inspect ARCHIVE` prints.
#pragma once

#include <string>

#include "archive/archive.h"

namespace spreplay {

// json == false: a table with one row per kernel (key prefix, module, function, call kind, SASS
// arches, PTX arch, fatbin and total blob sizes) and a summary line (kernel count, file size,
// toolchain, archive format). json == true: one JSON object with every index field, full keys
// and digests in hex, for scripts. Both end with a newline.
std::string DescribeArchive(const Archive& archive, bool json);

}  // namespace spreplay
