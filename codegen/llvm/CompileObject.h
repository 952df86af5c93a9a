// CompileObject.h -- a module through LLVM's optimisation pipeline and
// TargetMachine into a relocatable object (DESIGN.md §7), and the target's
// choices the emitter needs first (its vector width).
#pragma once

#include "codegen/AotLibrary.h"
#include "support/Status.h"

#include <llvm/Target/TargetMachine.h>

#include <memory>

namespace netc::aot {

/// The TargetMachine of `target` (the host's triple and CPU where empty),
/// position-independent; fails naming an unknown triple or CPU.
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
