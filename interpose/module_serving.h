#pragma once
// Serving modules from IR inside the module-loading hooks: asks the
// listeners for a plan (imports first), loads it with loadModuleFromIRBlob,
// and reports what had to load from source.

#include <string>

#include "interpose/hook_listener.h"
#include "slang.h"

namespace spreplay::hooks {

// What became of a module request before Slang's front end.
struct ModuleServing {
  enum Outcome { kLoadFromSource, kServed, kRefused } outcome = kLoadFromSource;
  slang::IModule* module = nullptr;  // kServed
  // kLoadFromSource: why not served, reported if the source load makes a
  // module (a request for a module Slang holds already is no miss).
  HookListener* listener = nullptr;
  std::string why;
};

// Asks the listeners whether `request` can be served from IR, and does it.
ModuleServing ServeModule(slang::ISession* session, ModuleLoadRequest& request,
                          ISlangBlob** diagnostics);

// After a load from source that `serving` did not serve; `loaded_new_module`
// is false when Slang returned a module it held already.
void ReportNotServed(const ModuleServing& serving, const ModuleLoadRequest& request,
                     bool loaded_new_module);

}  // namespace spreplay::hooks
