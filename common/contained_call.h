#pragma once
// Slang reports some failures by throwing its own C++ exceptions through its
// COM interfaces: a diagnostic it treats as fatal raises
// Slang::AbortCompilationException, which its C API does not catch (e.g. a
// module deserialized from IR whose lazy declarations import a module that
// cannot be loaded). Unhandled, one such kernel would end `spreplay compile`,
// or the app whose module the hooks load. Every call of ours into Slang runs
// through Contained: an exception becomes an error naming what we were doing
// and what was thrown, and the caller drops whatever Slang object it was
// using, whose state the unwinding may have left half-changed.
//
// Exceptions thrown inside a destructor cannot be contained: C++ ends the
// process there. Slang's IR reader throws from one when a lazily read
// declaration fails to import; spreplay keeps Slang off that path instead
// (modules whose imports form a cycle load from source, ir_modules.h).

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"

namespace spreplay {

// The type and message of the exception being handled, for errors.
inline std::string CurrentExceptionDescription() {
  std::string type = "an unknown exception";
  if (const std::type_info* info = abi::__cxa_current_exception_type()) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(info->name(), nullptr, nullptr, &status), std::free);
    type = status == 0 && demangled ? demangled.get() : info->name();
  }
  try {
    throw;
  } catch (const std::exception& error) {
    return fmt::format("{} ({})", type, error.what());
  } catch (...) {
    return type;
  }
}

// Runs `call`, which returns absl::Status or absl::StatusOr<T>; an exception
// it throws becomes an internal error: "Slang threw <type> while <doing>".
template <typename Call>
auto Contained(std::string_view doing, Call&& call) noexcept -> std::invoke_result_t<Call> {
  try {
    return call();
  } catch (...) {
    return absl::InternalError(
        fmt::format("Slang threw {} while {}", CurrentExceptionDescription(), doing));
  }
}

}  // namespace spreplay
