// CudaHostTest.cpp -- the CUDA backend's pure host functions, which run
// without a GPU (in CI): which compute capabilities a build runs on, the
// cuBLAS and cuDNN math modes per precision (FP32 never means TF32), the int arguments
// cublasSgemm takes and the refusal of sizes beyond them, and the element
// kernels' grid.
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/CudaLauncher.h"
#include "runtime/cuda/Cudnn.h"
#include "runtime/cuda/DeviceProbe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>

namespace netc::runtime::cuda {
namespace {

TEST(CudaArchitectures, MachineCodeAndPtxRunOnTheirOwnAndNewerGpus) {
  const int sm80and90[] = {80, 90};
  EXPECT_TRUE(architectureRuns(sm80and90, 8, 0));  // A100
  EXPECT_TRUE(architectureRuns(sm80and90, 8, 6));  // sm_80 code on 8.6
  EXPECT_TRUE(architectureRuns(sm80and90, 9, 0));  // H100, H200
  EXPECT_TRUE(architectureRuns(sm80and90, 12, 0)); // compute_90 PTX on a newer GPU
  EXPECT_FALSE(architectureRuns(sm80and90, 7, 5)); // Turing: nothing built for it
  const int sm90[] = {90};
  EXPECT_FALSE(architectureRuns(sm90, 8, 0));
  EXPECT_TRUE(architectureRuns(sm90, 9, 0));
  EXPECT_FALSE(builtArchitectures().empty());
}

TEST(CudaCublas, Fp32NeverAllowsTf32) {
  EXPECT_EQ(cublasMathMode(Precision::Fp32), CUBLAS_DEFAULT_MATH);
  EXPECT_EQ(cublasMathMode(Precision::Tf32), CUBLAS_TF32_TENSOR_OP_MATH);
  EXPECT_EQ(cublasLibraryName(), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
}

TEST(CudaCudnn, Fp32ConvolutionsUseFmaMathOnly) {
  EXPECT_EQ(cudnnMathType(Precision::Fp32), CUDNN_FMA_MATH);
  EXPECT_EQ(allowedMathTypes(Precision::Fp32), std::vector<int>{CUDNN_FMA_MATH});
  EXPECT_EQ(cudnnMathType(Precision::Tf32), CUDNN_DEFAULT_MATH);
  const std::vector<int> tf32 = allowedMathTypes(Precision::Tf32);
  EXPECT_NE(std::find(tf32.begin(), tf32.end(), CUDNN_TENSOR_OP_MATH), tf32.end());
  EXPECT_EQ(cudnnLibraryName(), "libcudnn.so." + std::to_string(CUDNN_MAJOR));
}

TEST(CudaCublas, SgemmArgumentsAndTheirLimits) {
  GemmCall call;
  call.transA = true, call.m = 10, call.n = 128, call.k = 100, call.lda = 100, call.ldb = 100, call.ldc = 10;
  auto args = sgemmArguments(call);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->transA, CUBLAS_OP_T);
  EXPECT_EQ(args->transB, CUBLAS_OP_N);
  EXPECT_EQ(args->m, 10);
  EXPECT_EQ(args->n, 128);
  EXPECT_EQ(args->k, 100);
  call.n = int64_t{INT_MAX} + 1;
  auto big = sgemmArguments(call);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.message().find("beyond cuBLAS's 32-bit sizes"), std::string::npos) << big.message();
}

TEST(CudaLaunch, ElementGridCoversEveryElementUpToItsCap) {
  EXPECT_EQ(elementBlocks(1), 1);
  EXPECT_EQ(elementBlocks(kElementThreads), 1);
  EXPECT_EQ(elementBlocks(kElementThreads + 1), 2);
  EXPECT_EQ(elementBlocks(int64_t{1} << 40, 1000), 1000); // beyond the cap each thread strides
}

} // namespace
} // namespace netc::runtime::cuda
