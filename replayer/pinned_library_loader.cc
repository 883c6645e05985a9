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

// Reference counting and queryInterface for a COM class of one interface.
template <typename Interface>
class ComObject : public Interface {
 public:
  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    *out = Implements(uuid) ? static_cast<Interface*>(this) : nullptr;
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

 protected:
  virtual ~ComObject() = default;
  virtual bool Implements(const SlangUUID& uuid) const = 0;

 private:
  std::atomic<uint32_t> references_{0};
};

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
