#include "replayer/pinned_library_loader.h"

#include <dlfcn.h>

#include <utility>

#include "fmt/format.h"
#include "interpose/com_object.h"
#include "replayer/com_ptr.h"

namespace spreplay {
namespace {

// A library opened by exact path. It is never closed: Slang keeps NVRTC's
// functions for the life of its global session, and so the process.
class OpenedLibrary final : public ComObject<ISlangSharedLibrary> {
 public:
  explicit OpenedLibrary(void* handle) : handle_(handle) {}

  SLANG_NO_THROW void* SLANG_MCALL castAs(const SlangUUID& guid) override {
    return Implements(guid) ? static_cast<ISlangSharedLibrary*>(this) : nullptr;
  }
  SLANG_NO_THROW void* SLANG_MCALL findSymbolAddressByName(const char* name) override {
    return dlsym(handle_, name);
  }

 private:
  bool Implements(const SlangUUID& uuid) const override {
    return SameUuid(uuid, ISlangUnknown::getTypeGuid()) ||
           SameUuid(uuid, ISlangCastable::getTypeGuid()) ||
           SameUuid(uuid, ISlangSharedLibrary::getTypeGuid());
  }

  void* handle_;
};

class PinnedLibraryLoader final : public ComObject<ISlangSharedLibraryLoader> {
 public:
  PinnedLibraryLoader(ComPtr<ISlangSharedLibraryLoader> fallback, std::string requested,
                      std::string file)
      : fallback_(std::move(fallback)), requested_(std::move(requested)), file_(std::move(file)) {}

  SLANG_NO_THROW SlangResult SLANG_MCALL loadSharedLibrary(const char* path,
                                                           ISlangSharedLibrary** out) override {
    *out = nullptr;
    if (!path || requested_ != path) {
      return fallback_ ? fallback_->loadSharedLibrary(path, out) : SLANG_E_NOT_FOUND;
    }
    void* handle = dlopen(file_.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) return SLANG_E_NOT_FOUND;
    *out = new OpenedLibrary(handle);
    (*out)->addRef();
    return SLANG_OK;
  }

 private:
  bool Implements(const SlangUUID& uuid) const override {
    return SameUuid(uuid, ISlangUnknown::getTypeGuid()) ||
           SameUuid(uuid, ISlangSharedLibraryLoader::getTypeGuid());
  }

  ComPtr<ISlangSharedLibraryLoader> fallback_;
  std::string requested_;
  std::string file_;
};

}  // namespace

absl::Status PinSharedLibrary(slang::IGlobalSession* session, std::string requested,
                              std::string file) {
  if (!dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL))
    return absl::FailedPreconditionError(fmt::format("cannot load {}: {}", file, dlerror()));
  ComPtr<ISlangSharedLibraryLoader> fallback(session->getSharedLibraryLoader());
  auto loader = ComPtr<ISlangSharedLibraryLoader>(
      new PinnedLibraryLoader(std::move(fallback), std::move(requested), std::move(file)));
  session->setSharedLibraryLoader(loader.get());
  return absl::OkStatus();
}

}  // namespace spreplay
