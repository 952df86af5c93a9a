// FastElementwiseKernels.cpp -- the fast table's pooling, normalization,
// output-function and loss kernels: the shared templates instantiated in
// float (WindowKernels.h, ElementwiseKernels.h, LossKernels.h).
#include "runtime/cpu/ElementwiseKernels.h"
#include "runtime/cpu/LossKernels.h"
#include "runtime/cpu/WindowKernels.h"

namespace netc::runtime::cpu::fast {

void MaxPool(const KernelCall &c) {
  maxPool<float>(c);
}
void MaxPoolGrad(const KernelCall &c) {
  maxPoolGrad<float>(c);
}
void MeanPool(const KernelCall &c) {
  meanPool<float>(c);
}
void MeanPoolGrad(const KernelCall &c) {
  meanPoolGrad<float>(c);
}
void ResponseNorm(const KernelCall &c) {
  responseNorm<float>(c);
}
void ResponseNormGrad(const KernelCall &c) {
  responseNormGrad<float>(c);
}
void Activate(const KernelCall &c) {
  activate<float>(c);
}
void ActivateGrad(const KernelCall &c) {
  activateGrad<float>(c);
}
void SoftmaxCrossEntropy(const KernelCall &c) {
  lossKernel<double>(c, 0);
}
void SigmoidCrossEntropy(const KernelCall &c) {
  lossKernel<double>(c, 1);
}
void SquaredError(const KernelCall &c) {
  lossKernel<double>(c, 2);
}

} // namespace netc::runtime::cpu::fast
