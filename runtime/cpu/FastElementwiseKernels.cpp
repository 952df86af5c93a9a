// FastElementwiseKernels.cpp -- the fast table's pooling, normalization,
// output-function and loss kernels: the shared templates instantiated in
// float (WindowKernels.h, ElementwiseKernels.h, LossKernels.h), and the row
// ranges of an activation a convolution fuses (activateRows).
#include "runtime/cpu/TemplateKernels.h"

namespace netc::runtime::cpu::NETC_FAST_NAMESPACE {

NETC_TEMPLATE_KERNELS(float)

// Compiled here, with the activation kernel's own flags, so a fused
// activation computes the same bits as the op it replaces.
void activateRows(const KernelCall &activation, int64_t row, int64_t rows) {
  activateRowRange<float>(activation, row, rows);
}

} // namespace netc::runtime::cpu::NETC_FAST_NAMESPACE
