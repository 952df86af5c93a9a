// CompileObject.cpp -- target machines, the optimisation pipeline and object
// and archive writing (CompileObject.h).
#include "codegen/llvm/CompileObject.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <fmt/format.h>

#include <mutex>

namespace netc::aot {

namespace {

void initialiseTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

} // namespace

Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const Target &target) {
  initialiseTargets();
  const bool host = target.triple.empty();
  const std::string tripleText =
      host ? llvm::sys::getDefaultTargetTriple() : llvm::Triple::normalize(target.triple);
  llvm::Triple triple(tripleText);
  std::string why;
  const llvm::Target *found = llvm::TargetRegistry::lookupTarget(triple.str(), why);
  if (!found || triple.getArch() == llvm::Triple::UnknownArch)
    return fail(fmt::format("--target {}: not a target this LLVM knows ({}); e.g. x86_64-linux-gnu or "
                            "aarch64-linux-gnu",
                            target.triple, why.empty() ? "unknown architecture" : why));
  if (!triple.isOSBinFormatELF())
    return fail(fmt::format("--target {}: netc build writes ELF libraries (Linux and the like), not {}",
                            target.triple, triple.str()));
  std::string cpu = target.cpu, features;
  if (cpu.empty()) {
    if (host) {
      cpu = llvm::sys::getHostCPUName().str();
      llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
      for (const auto &f : hostFeatures)
        features += (features.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
    } else {
      cpu = "generic";
    }
  }
  // Checked against the target's own list first: LLVM would only warn on
  // stderr and ignore a CPU it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(found->createMCSubtargetInfo(triple.str(), "generic", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return fail(fmt::format(
        "--cpu {}: not a CPU of {} (e.g. generic, {}); `llc-19 -mtriple={} -mcpu=help` lists them", cpu,
        triple.getArchName().str(),
        triple.isAArch64() ? "neoverse-n1, cortex-a72, apple-m1" : "x86-64-v3, skylake-avx512, znver4",
        triple.str()));
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      found->createTargetMachine(triple.str(), cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
                                 llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return fail(fmt::format("LLVM made no target machine for {} (cpu {})", triple.str(), cpu));
  return machine;
}

int64_t lanesFor(const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  return machine.getTargetTriple().isX86() && info->checkFeatures("+avx512f") ? 16 : 8;
}

Expected<std::string> compileToObject(llvm::Module &module, llvm::TargetMachine &machine) {
  module.setTargetTriple(machine.getTargetTriple().str());
  module.setDataLayout(machine.createDataLayout());
  // The new pass manager's O3 pipeline, with the machine's cost model.
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder passes(&machine, tuning);
  passes.registerModuleAnalyses(modules);
  passes.registerCGSCCAnalyses(cgscc);
  passes.registerFunctionAnalyses(functions);
  passes.registerLoopAnalyses(loops);
  passes.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::ModulePassManager pipeline = passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);

  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager emit;
  if (machine.addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return fail(fmt::format("LLVM cannot write an object file for {}", machine.getTargetTriple().str()));
  emit.run(module);
  return std::string(bytes.begin(), bytes.end());
}

Expected<std::string> archiveOf(const std::string &memberName, const std::string &object) {
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(object), memberName, /*RequiresNullTerminator=*/false);
  std::vector<llvm::NewArchiveMember> members(1);
  members[0].Buf = std::move(buffer);
  members[0].MemberName = memberName;
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> archive =
      llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab, llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  if (!archive)
    return fail("writing the static archive: " + llvm::toString(archive.takeError()));
  return std::string((*archive)->getBufferStart(), (*archive)->getBufferSize());
}

} // namespace netc::aot
