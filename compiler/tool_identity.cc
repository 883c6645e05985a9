#include "compiler/tool_identity.h"

#include "source_digest.h"

namespace spreplay {

std::string_view ToolIdentity() { return SPREPLAY_VERSION "+" SPREPLAY_SOURCE_DIGEST; }

}  // namespace spreplay
