// TemplateKernels.h -- the ops whose fast and reference kernels are the same
// template (WindowKernels.h, ElementwiseKernels.h, LossKernels.h), instantiated
// in float by the fast table and in double by the reference table. The losses
// accumulate in double in both.
#pragma once

#include "runtime/cpu/ElementwiseKernels.h"
#include "runtime/cpu/LossKernels.h"
#include "runtime/cpu/WindowKernels.h"

// clang-format off
#define NETC_TEMPLATE_KERNELS(T)                                                                               \
  void MaxPool(const KernelCall &c) { maxPool<T>(c); }                                                         \
  void MaxPoolGrad(const KernelCall &c) { maxPoolGrad<T>(c); }                                                 \
  void MeanPool(const KernelCall &c) { meanPool<T>(c); }                                                       \
  void MeanPoolGrad(const KernelCall &c) { meanPoolGrad<T>(c); }                                               \
  void ResponseNorm(const KernelCall &c) { responseNorm<T>(c); }                                               \
  void ResponseNormGrad(const KernelCall &c) { responseNormGrad<T>(c); }                                       \
  void Activate(const KernelCall &c) { activate<T>(c); }                                                       \
  void ActivateGrad(const KernelCall &c) { activateGrad<T>(c); }                                               \
  void SoftmaxCrossEntropy(const KernelCall &c) { lossKernel<double>(c, 0); }                                  \
  void SigmoidCrossEntropy(const KernelCall &c) { lossKernel<double>(c, 1); }                                  \
  void SquaredError(const KernelCall &c) { lossKernel<double>(c, 2); }
// clang-format on
