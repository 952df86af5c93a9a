// SharedLibrary.h -- a shared library opened on demand (dlopen) and its
// entry points resolved by name, as the CUDA backend loads cuBLAS and
// cuDNN only when a plan runs on a GPU (Cublas.h, Cudnn.h). Header only.
#pragma once

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace netc::runtime::cuda {

class SharedLibrary {
public:
  SharedLibrary() = default;
  ~SharedLibrary() {
    if (handle_)
      dlclose(handle_);
  }
  SharedLibrary(const SharedLibrary &) = delete;
  SharedLibrary &operator=(const SharedLibrary &) = delete;

  /// Opens `name` (found as the dynamic loader finds libraries); false, with
  /// the loader's words in why(), when it cannot.
  bool open(const std::string &name) {
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char *error = dlerror();
      why_ = error ? error : "unknown error";
    }
    return handle_ != nullptr;
  }
  const std::string &why() const { return why_; }

  /// Sets `function` to entry point `symbol`; a missing one is added to missing().
  template <class Function> void resolve(Function &function, const char *symbol) {
    function = reinterpret_cast<std::remove_reference_t<Function>>(dlsym(handle_, symbol));
    if (!function)
      missing_ += missing_.empty() ? std::string(symbol) : ", " + std::string(symbol);
  }
  /// Sets `function` to entry point `symbol`, or null without counting it
  /// missing: one that only some versions have (the caller says what needs it).
  template <class Function> void resolveOptional(Function &function, const char *symbol) {
    function = reinterpret_cast<std::remove_reference_t<Function>>(dlsym(handle_, symbol));
  }
  /// The entry points resolve() did not find, comma-separated (empty: none).
  const std::string &missing() const { return missing_; }

private:
  void *handle_ = nullptr;
  std::string why_, missing_;
};

} // namespace netc::runtime::cuda
