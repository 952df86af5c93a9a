// FastElementwiseKernels.cpp -- the fast table's pooling, normalization,
// output-function and loss kernels: the shared templates instantiated in
// float (WindowKernels.h, ElementwiseKernels.h, LossKernels.h).
#include "runtime/cpu/TemplateKernels.h"

namespace netc::runtime::cpu::NETC_FAST_NAMESPACE {

NETC_TEMPLATE_KERNELS(float)

} // namespace netc::runtime::cpu::NETC_FAST_NAMESPACE
