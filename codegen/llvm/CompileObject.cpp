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

#include "support/PrintableText.h"

#include <fmt/format.h>

#include <algorithm>
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

/// "x86_64-linux-gnu, aarch64-linux-gnu, ..."
std::string supportedTargetsText() {
  std::string out;
  for (const SupportedArchitecture &a : supportedArchitectures())
    out += (out.empty() ? "" : ", ") + std::string(a.example);
  return out;
}

} // namespace

const std::vector<SupportedArchitecture> &supportedArchitectures() {
  static const std::vector<SupportedArchitecture> list = {
      {"x86_64", "x86_64-linux-gnu", "x86-64-v3, skylake-avx512, znver4", true},
      {"aarch64", "aarch64-linux-gnu", "neoverse-n1, cortex-a72, apple-m1", false},
      {"riscv64", "riscv64-linux-gnu", "sifive-u74, generic-rv64", true},
      {"powerpc64le", "powerpc64le-linux-gnu", "pwr9, pwr10", false},
  };
  return list;
}

Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const Target &target) {
  initialiseTargets();
  const bool host = target.triple.empty();
  // Checked before LLVM parses them: text a terminal or the README would
  // show otherwise (a newline, an escape) is refused here.
  for (const std::string *text : {&target.triple, &target.cpu})
    if (std::any_of(text->begin(), text->end(), [](unsigned char c) { return c < 0x21 || c > 0x7e; }))
      return fail(fmt::format("--{} '{}': a {} is printable ASCII without spaces",
                              text == &target.triple ? "target" : "cpu", printableText(*text),
                              text == &target.triple ? "target triple" : "CPU name"));
  const std::string tripleText =
      host ? llvm::sys::getDefaultTargetTriple() : llvm::Triple::normalize(target.triple);
  llvm::Triple triple(tripleText);
  std::string why;
  const llvm::Target *found = llvm::TargetRegistry::lookupTarget(triple.str(), why);
  if (!found || triple.getArch() == llvm::Triple::UnknownArch)
    return fail(fmt::format("--target {}: not a target this LLVM knows ({}); e.g. {}", target.triple,
                            why.empty() ? "unknown architecture" : why, supportedTargetsText()));
  // Only the architectures netc's code generator is built and checked for:
  // LLVM knows many more (GPUs, BPF, microcontrollers), and on some of them
  // it ends the process rather than report that it cannot compile the
  // library's floating-point loops.
  const std::string archName = llvm::Triple::getArchTypeName(triple.getArch()).str();
  auto arch = std::find_if(supportedArchitectures().begin(), supportedArchitectures().end(),
                           [&](const SupportedArchitecture &a) { return archName == a.name; });
  if (arch == supportedArchitectures().end())
    return fail(fmt::format("--target {}: netc build compiles for {} (64-bit ELF: Linux and the like), not "
                            "{}; e.g. --target aarch64-linux-gnu",
                            target.triple, supportedArchitecturesText(), archName));
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
        triple.getArchName().str(), arch->cpus, triple.str()));
  // A 32-bit processor of the architecture (i386, pentium4, sifive-e31):
  // LLVM would end the process on "64-bit code requested" at the first
  // instruction it selects.
  if (arch->sixtyFourBitFeature) {
    std::unique_ptr<llvm::MCSubtargetInfo> chosen(found->createMCSubtargetInfo(triple.str(), cpu, ""));
    if (!chosen || !chosen->checkFeatures("+64bit"))
      return fail(fmt::format("--cpu {}: a 32-bit processor; {} code needs a 64-bit one (e.g. generic, {})",
                              cpu, triple.getArchName().str(), arch->cpus));
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      found->createTargetMachine(triple.str(), cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
                                 llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return fail(fmt::format("LLVM made no target machine for {} (cpu {})", triple.str(), cpu));
  return machine;
}

std::string supportedArchitecturesText() {
  std::string out;
  const auto &list = supportedArchitectures();
  for (size_t i = 0; i < list.size(); ++i)
    out += (i == 0 ? "" : i + 1 == list.size() ? " and " : ", ") + std::string(list[i].name);
  return out;
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
