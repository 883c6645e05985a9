#pragma once
// An owning reference to a Slang COM object. The slangpy wheel ships slang.h
// without Slang's own slang-com-ptr.h, so the replayer carries this minimal one.

#include <utility>

namespace spreplay {

template <typename T>
class ComPtr {
 public:
  ComPtr() = default;
  // Takes a new reference to `object`.
  explicit ComPtr(T* object) : object_(object) {
    if (object_) object_->addRef();
  }
  ComPtr(const ComPtr& other) : ComPtr(other.object_) {}
  ComPtr(ComPtr&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  ComPtr& operator=(ComPtr other) noexcept {
    std::swap(object_, other.object_);
    return *this;
  }
  ~ComPtr() { Reset(); }

  // Adopts a reference the caller already owns, e.g. one a factory returned.
  static ComPtr Adopt(T* object) {
    ComPtr pointer;
    pointer.object_ = object;
    return pointer;
  }

  // For Slang's out-parameters: drops the current reference first.
  T** WriteRef() {
    Reset();
    return &object_;
  }

  void Reset() {
    if (object_) std::exchange(object_, nullptr)->release();
  }

  T* get() const { return object_; }
  T* operator->() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  T* object_ = nullptr;
};

}  // namespace spreplay
