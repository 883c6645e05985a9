#include "replayer/pinned_library_loader.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "fmt/format.h"
#include "replayer/com_ptr.h"

namespace spreplay {
namespace {

bool SameUuid(const SlangUUID& a, const SlangUUID& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A library opened by exact path. It is never closed: Slang keeps NVRTC's
// functions for the life of its global session, and so the process.
class OpenedLibrary final : public ISlangSharedLibrary {
 public:
  explicit OpenedLibrary(void* handle) : handle_(handle) {}

  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    *out = castAs(uuid);
    if (!*out) return SLANG_E_NO_INTERFACE;
    addRef();
    return SLANG_OK;
  }
  SLANG_NO_THROW uint32_t SLANG_MCALL addRef() override { return ++references_; }
  SLANG_NO_THROW uint32_t SLANG_MCALL release() override {
    const uint32_t remaining = --references_;
    if (remaining == 0) delete this;
    return remaining;
  }
  SLANG_NO_THROW void* SLANG_MCALL castAs(const SlangUUID& guid) override {
    if (SameUuid(guid, ISlangUnknown::getTypeGuid()) ||
        SameUuid(guid, ISlangCastable::getTypeGuid()) ||
        SameUuid(guid, ISlangSharedLibrary::getTypeGuid())) {
      return static_cast<ISlangSharedLibrary*>(this);
    }
    return nullptr;
  }
  SLANG_NO_THROW void* SLANG_MCALL findSymbolAddressByName(const char* name) override {
    return dlsym(handle_, name);
  }

 private:
  void* handle_;
  std::atomic<uint32_t> references_{0};
};

class PinnedLibraryLoader final : public ISlangSharedLibraryLoader {
 public:
  PinnedLibraryLoader(ComPtr<ISlangSharedLibraryLoader> fallback, std::string requested,
                      std::string file)
      : fallback_(std::move(fallback)), requested_(std::move(requested)), file_(std::move(file)) {}

  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    if (!SameUuid(uuid, ISlangUnknown::getTypeGuid()) &&
        !SameUuid(uuid, ISlangSharedLibraryLoader::getTypeGuid())) {
      *out = nullptr;
      return SLANG_E_NO_INTERFACE;
    }
    *out = static_cast<ISlangSharedLibraryLoader*>(this);
    addRef();
    return SLANG_OK;
  }
  SLANG_NO_THROW uint32_t SLANG_MCALL addRef() override { return ++references_; }
  SLANG_NO_THROW uint32_t SLANG_MCALL release() override {
    const uint32_t remaining = --references_;
    if (remaining == 0) delete this;
    return remaining;
  }
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
  ComPtr<ISlangSharedLibraryLoader> fallback_;
  std::string requested_;
  std::string file_;
  std::atomic<uint32_t> references_{0};
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
