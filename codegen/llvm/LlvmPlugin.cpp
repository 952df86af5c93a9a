// LlvmPlugin.cpp -- the entry points of libnetc-llvm.so (codegen/AotLibrary.h):
// the only part of netc that links libLLVM, loaded by `netc build` and
// `netc compile --emit=llvm` alone. Every failure, an LLVM one included,
// comes back as a message in Output::error, never as an exception or an
// exit across the plugin boundary. Targets and CPUs are checked before LLVM
// sees them (CompileObject.cpp); as a second line, LLVM's fatal errors
// ("Cannot select", report_fatal_error) inside an entry point become an
// exception caught at the boundary instead of ending the process, and the
// errors an LLVMContext reports (which would call exit) are collected into
// the message.
#include "codegen/AotLibrary.h"
#include "codegen/llvm/CompileObject.h"
#include "codegen/llvm/EmitModule.h"

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <stdexcept>

namespace {

using netc::aot::Output;
using netc::aot::Request;

/// LLVM's report of an error it cannot recover from, inside an entry point.
struct LlvmFatalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Whether this thread is inside an entry point of the plugin: a pthread key
/// rather than thread_local, whose dynamic TLS block in a dlopen'ed library
/// makes LeakSanitizer's exit-time scan crash now and then (a known fault in
/// its glibc TLS detection) in the sanitizer builds the tests run.
struct GuardedKey {
  pthread_key_t key{};
  bool created = false;
};
const GuardedKey &guardedKey() {
  static const GuardedKey key = [] {
    GuardedKey made;
    made.created = pthread_key_create(&made.key, nullptr) == 0;
    return made;
  }();
  return key;
}
bool isGuarded() {
  return guardedKey().created && pthread_getspecific(guardedKey().key) != nullptr;
}

/// LLVM's fatal-error handler, process-wide once installed: inside an entry
/// point the error unwinds to it (LLVM's objects on the way are leaked, not
/// used again); elsewhere -- another user of libLLVM in the same process --
/// it does what LLVM does without a handler (LLVM then ends the process).
void onFatalError(void *, const char *reason, bool) {
  if (isGuarded())
    throw LlvmFatalError(reason ? reason : "unknown error");
  std::fprintf(stderr, "LLVM ERROR: %s\n", reason ? reason : "unknown error");
}

template <class Body> bool guarded(Output *output, Body body) {
  static std::once_flag installed;
  std::call_once(installed, [] { llvm::install_fatal_error_handler(onFatalError, nullptr); });
  if (!guardedKey().created) {
    output->error = "the LLVM plugin cannot guard LLVM's fatal errors: the process has used all its "
                    "thread-specific keys (PTHREAD_KEYS_MAX)";
    return false;
  }
  static int marker; // any non-null value marks the thread as guarded
  struct Guard {
    Guard() { pthread_setspecific(guardedKey().key, &marker); }
    ~Guard() { pthread_setspecific(guardedKey().key, nullptr); }
  } guard;
  try {
    return body();
  } catch (const LlvmFatalError &e) {
    output->error = std::string("LLVM cannot compile this library: ") + e.what();
  } catch (const std::exception &e) {
    output->error = std::string("the LLVM code generator failed: ") + e.what();
  } catch (...) {
    output->error = "the LLVM code generator failed";
  }
  return false;
}

/// Collects the errors `context` reports (LLVM's default prints them and
/// calls exit); warnings and remarks are dropped.
class CollectedDiagnostics {
public:
  explicit CollectedDiagnostics(llvm::LLVMContext &context) {
    context.setDiagnosticHandlerCallBack(
        [](const llvm::DiagnosticInfo *info, void *self) {
          if (info->getSeverity() != llvm::DS_Error)
            return;
          std::string text;
          llvm::raw_string_ostream os(text);
          llvm::DiagnosticPrinterRawOStream printer(os);
          info->print(printer);
          os.flush();
          auto &errors = static_cast<CollectedDiagnostics *>(self)->errors_;
          errors += (errors.empty() ? "" : "; ") + text;
        },
        this);
  }
  const std::string &errors() const { return errors_; }

private:
  std::string errors_;
};

} // namespace

extern "C" {

__attribute__((visibility("default"))) int netc_llvm_plugin_abi() {
  return netc::aot::kLlvmPluginAbi;
}

__attribute__((visibility("default"))) bool netc_llvm_emit_ir(const Request *request, Output *output) {
  return guarded(output, [&] {
    llvm::LLVMContext context;
    auto module = netc::aot::emitModule(context, *request, netc::aot::kLanes);
    if (!module) {
      output->error = module.message();
      return false;
    }
    output->bytes.clear();
    llvm::raw_string_ostream os(output->bytes);
    (*module)->print(os, nullptr);
    os.flush();
    return true;
  });
}

__attribute__((visibility("default"))) bool netc_llvm_compile_object(const Request *request, Output *output) {
  return guarded(output, [&] {
    auto machine = netc::aot::makeTargetMachine(request->target);
    if (!machine) { // an unknown --target or --cpu
      output->error = machine.message();
      output->usage = true;
      return false;
    }
    llvm::LLVMContext context;
    CollectedDiagnostics diagnostics(context);
    auto module = netc::aot::emitModule(context, *request, netc::aot::lanesFor(**machine));
    if (!module) {
      output->error = module.message();
      return false;
    }
    auto object = netc::aot::compileToObject(**module, **machine);
    if (!diagnostics.errors().empty()) {
      output->error = "LLVM cannot compile this library: " + diagnostics.errors();
      return false;
    }
    if (!object) {
      output->error = object.message();
      return false;
    }
    output->bytes = std::move(*object);
    output->triple = (*machine)->getTargetTriple().str();
    output->cpu = (*machine)->getTargetCPU().str();
    return true;
  });
}

__attribute__((visibility("default"))) bool netc_llvm_archive(const std::string *memberName,
                                                              const std::string *object, Output *output) {
  return guarded(output, [&] {
    auto archive = netc::aot::archiveOf(*memberName, *object);
    if (!archive) {
      output->error = archive.message();
      return false;
    }
    output->bytes = std::move(*archive);
    return true;
  });
}

/// For the tests (tests/aot/fatal_error_guard_test.cpp): an LLVM fatal error
/// inside an entry point's guard, which must come back as Output::error
/// while the process goes on.
__attribute__((visibility("default"))) bool netc_llvm_check_fatal_error_guard(Output *output) {
  return guarded(output, []() -> bool { llvm::report_fatal_error("netc's check of its fatal-error guard"); });
}

} // extern "C"
