// NoAllocationTest.cpp -- nothing allocates inside Backend::run
// (docs/architecture.md §Runtime principles; what lets a device backend
// capture a whole step as one graph). This
// binary replaces the global operator new and delete (plain, array and
// nothrow forms; the aligned ones stay the runtime's) with counting versions
// and runs training steps of every example on the fast and the reference
// CPU backend, each thread count, with and without gradient accumulation:
// after a warm-up step (OpenMP starts its threads), the count must not move
// across a run, and the step must still change the parameters.
#include "PlanHarness.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<int64_t> gAllocations{0};
} // namespace

void *operator new(size_t size) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void *operator new[](size_t size) {
  return operator new(size);
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them), so
// that every form of delete below frees what this file's new allocated.
void *operator new(size_t size, const std::nothrow_t &) noexcept {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}
void *operator new[](size_t size, const std::nothrow_t &) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept {
  std::free(p);
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete[](void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void *p, size_t) noexcept {
  std::free(p);
}

namespace netc::numeric {
namespace {

TEST(NoAllocation, TrainingStepsAllocateNothingInsideRun) {
  std::vector<std::string> checked;
  for (const std::string &name : exampleNames()) {
    const std::string text = readFile(sourcePath("examples/" + name));
    auto compilation = compileSource(SourceFile(name, text), {}, Stage::Passes);
    if (compilation->diags.errorCount() != 0) { // an `auto` input needs a size
      CompileOptions options;
      options.inputSize = 64;
      compilation = compileSource(SourceFile(name, text), options, Stage::Passes);
    }
    if (compilation->diags.errorCount() != 0)
      continue; // examples that need other options are covered by ExampleStepTest
    checked.push_back(name);
    for (bool accumulate : {false, true})
      for (MachineKind kind :
           {MachineKind{1, false, {}}, MachineKind{2, false, {}}, MachineKind{1, true, {}}}) {
        SCOPED_TRACE(fmt::format("{} accumulate={} threads={} reference={}", name, accumulate, kind.threads,
                                 kind.reference));
        plan::PlanOptions planOptions;
        planOptions.update.hyper.momentum = 0.9f;
        planOptions.accumulateGradients = accumulate;
        auto plan = plan::buildPlan(compilation->network, planOptions);
        ASSERT_TRUE(plan.ok()) << plan.message();
        const int64_t batch = 5;
        Machine m(*plan, batch, kind);
        m.restore(randomState(*plan, batch, 3));
        m.run(0, plan->ops.size()); // warm-up: OpenMP and OpenBLAS set up their threads
        const std::vector<float> before = m.read(plan->parameterArena);
        const auto scalars = optim::stepScalars(planOptions.update, 0.1f, 2, batch, batch);
        m.backend().write(plan->scalars, scalars);
        const int64_t start = gAllocations.load();
        const bool ran = m.backend().run(0, plan->ops.size(), batch).ok() &&
                         m.backend().run(plan->stepBegin, plan->ops.size(), batch, 1).ok();
        const int64_t during = gAllocations.load() - start;
        EXPECT_TRUE(ran);
        EXPECT_EQ(during, 0) << "operator new was called " << during << " time(s) inside Backend::run";
        EXPECT_NE(m.read(plan->parameterArena), before) << "the steps changed no parameter";
      }
  }
  // The seed network and LeNet-5 at least (convolutions, pooling, dense).
  for (const char *name : {"mnist.net", "lenet5.net"})
    EXPECT_NE(std::find(checked.begin(), checked.end(), name), checked.end()) << name << " was not checked";
  EXPECT_GE(checked.size(), 5u);
}

} // namespace
} // namespace netc::numeric
