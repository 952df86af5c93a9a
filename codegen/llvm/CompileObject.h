// CompileObject.h -- a module through LLVM's optimisation pipeline and
// TargetMachine into a relocatable object (docs/codegen.md), and the target's
// choices the emitter needs first (its vector width).
#pragma once

#include "codegen/AotLibrary.h"
#include "support/Status.h"

#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

namespace netc::aot {

/// An architecture netc build compiles for (LLVM's name), a triple and CPUs
/// to show as examples, and whether its 32-bit processors lack LLVM's
/// "64bit" feature (they are refused).
struct SupportedArchitecture {
  const char *name, *example, *cpus;
  bool sixtyFourBitFeature;
};
/// Every architecture netc build compiles for: a short list, checked
/// before LLVM sees a triple (tests/aot/cross_targets_test.sh builds each).
const std::vector<SupportedArchitecture> &supportedArchitectures();
/// "x86_64, aarch64, riscv64 and powerpc64le".
std::string supportedArchitecturesText();

/// The TargetMachine of `target` (the host's triple and CPU where empty),
/// position-independent; fails naming an unknown or unsupported triple, an
/// unknown CPU or a 32-bit one, and text that is not a name.
Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const Target &target);

/// The lanes the emitter should use on `machine`: 16 floats where it has
/// 512-bit vectors, else 8.
int64_t lanesFor(const llvm::TargetMachine &machine);

/// Optimises `module` for `machine` (the O3 pipeline) and returns the object
/// file's bytes.
Expected<std::string> compileToObject(llvm::Module &module, llvm::TargetMachine &machine);

/// A static archive of one member.
Expected<std::string> archiveOf(const std::string &memberName, const std::string &object);

} // namespace netc::aot
