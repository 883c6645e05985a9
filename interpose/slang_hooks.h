#pragma once
// Intercepts the Slang API calls through which slangpy (sgl) and slang-rhi
// build programs, by patching the vtables of Slang's own classes in place.
//
// The chain: slang_createGlobalSession2 (interposed by the shim) hands us the
// global session; createSession hands us sessions; module loads, composites,
// links and renames hand us the component objects, which we describe by
// content (component.h); getEntryPointCode is where a kernel is either served
// from an archive or compiled as usual. Objects the hooks describe are kept
// alive, so their addresses can never be reused by an object we did not see,
// until the app lets their session go: then the hooks forget the session and
// everything made in it, and release it all (a hot reload makes a new session
// each time).

#include <string>

#include "absl/status/status.h"
#include "interpose/hook_listener.h"

namespace spreplay {

struct HookOptions {
  // Identifies the code generator: Slang's build tag plus the slangpy
  // version. Part of every kernel key.
  std::string toolchain;
  // The libslang-compiler slangpy loaded, for the few C reflection functions
  // the hooks call.
  std::string slang_library;
  bool verbose = false;  // one line on stderr per hooked event
};

// The first call sets the options, before the first Slang global session;
// later calls change nothing. Listeners may be added at any time, from any
// thread: a hook already running goes on with the listeners it started with.
// A listener must live until the process exits.
absl::Status ConfigureSlangHooks(const HookOptions& options);
void AddHookListener(HookListener* listener);

HookCounts GetHookCounts();

// How many sessions and components the hooks hold now.
struct HeldObjects {
  size_t sessions = 0;
  size_t components = 0;
};
HeldObjects GetHeldObjects();

// The vtable slots the hooks patch, one "INTERFACE METHOD SLOT" line each,
// as this build's slang.h lays them out: what tests check against that
// header's declarations (tools/slang_abi.py).
std::string PatchedSlotsText();

// Patches the vtables reachable from a freshly created slang::IGlobalSession.
// Called by the shim for every global session slangpy creates.
void OnGlobalSessionCreated(void* global_session);

}  // namespace spreplay
