#pragma once
// A session's keyed settings as readable lines, one per option, define or
// target field ("DebugInformation = 2", "define SGL_ENABLE_PRINT = 0"): what
// its kernel keys hold, in words. Archives keep them per session so that a
// miss caused by another setting can name the setting.

#include <string>
#include <vector>

#include "interpose/session_config.h"

namespace spreplay {

// Sorted. Locations (include paths) are left out, as keys leave them out;
// slangpy's install directory reads "<slangpy>".
std::vector<std::string> KeyedSettings(const SessionConfig& config);

// What `current` has that `archived` lacks and the other way round, e.g.
// "DebugInformation = 2 here, against DebugInformation = 0 in the archive"; ""
// if none.
std::string DescribeSettingsChange(const std::vector<std::string>& archived,
                                   const std::vector<std::string>& current);

// slang::CompilerOptionName as the header spells it; "option N" for names
// spreplay does not know.
std::string CompilerOptionNameText(int32_t name);

}  // namespace spreplay
