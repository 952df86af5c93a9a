// LlvmPlugin.cpp -- the entry points of libnetc-llvm.so (codegen/AotLibrary.h):
// the only part of netc that links libLLVM, loaded by `netc build` and
// `netc compile --emit=llvm` alone. Every failure, an LLVM one included,
// comes back as a message in Output::error, never as an exception or an
// exit across the plugin boundary.
#include "codegen/AotLibrary.h"
#include "codegen/llvm/CompileObject.h"
#include "codegen/llvm/EmitModule.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <exception>

namespace {

using netc::aot::Output;
using netc::aot::Request;

template <class Body> bool guarded(Output *output, Body body) {
  try {
    return body();
  } catch (const std::exception &e) {
    output->error = std::string("the LLVM code generator failed: ") + e.what();
  } catch (...) {
    output->error = "the LLVM code generator failed";
  }
  return false;
}

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
    auto module = netc::aot::emitModule(context, *request, netc::aot::lanesFor(**machine));
    if (!module) {
      output->error = module.message();
      return false;
    }
    auto object = netc::aot::compileToObject(**module, **machine);
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

} // extern "C"
