// DenseKernelChoiceTest.cpp -- the choice of the dense products' kernels
// (runtime/cpu/DenseKernelChoice.h) as a pure function of recorded machines:
// the /proc/cpuinfo flags of an AMD EPYC Zen 5 (this project's CI machine),
// a Zen 4, an Intel Sapphire Rapids cloud VM ("Intel Xeon Processor", whose
// OpenBLAS 0.3.21 picks the generic Prescott kernels), an AVX2-only Haswell
// and a baseline x86-64 (QEMU's qemu64 model), each with what OpenBLAS said
// of itself there; the warning when generic code would run on a CPU with
// AVX2 or AVX-512, and where it would not; and where `--precision bf16`
// runs (bf16Refusal).
#include "runtime/cpu/DenseKernelChoice.h"

#include <gtest/gtest.h>

namespace netc::runtime::cpu {
namespace {

// Recorded flags lines (the vector and feature words; each line as the kernel prints it).
constexpr std::string_view kZen5 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht "
    "syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid "
    "extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt "
    "tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a "
    "misalignsse 3dnowprefetch osvw topoext ssbd ibrs ibpb stibp ibrs_enhanced vmmcall fsgsbase tsc_adjust "
    "bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 clzero xsaveerptr wbnoinvd arat "
    "avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq "
    "rdpid movdiri movdir64b fsrm avx512_vp2intersect flush_l1d";
constexpr std::string_view kZen4 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht "
    "syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid "
    "aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 movbe popcnt aes xsave avx f16c "
    "rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit "
    "wdt "
    "tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs "
    "ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap "
    "avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc "
    "cqm_occup_llc cqm_mbm_total cqm_mbm_local avx512_bf16 clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin "
    "cppc arat npt lbrv svm_lock nrip_save avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq "
    "avx512_vnni avx512_bitalg avx512_vpopcntdq la57 rdpid overflow_recov succor smca fsrm flush_l1d";
constexpr std::string_view kSapphireRapids =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht "
    "syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni "
    "pclmulqdq ssse3 fma cx16 pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx "
    "f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single ssbd ibrs ibpb stibp "
    "ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap "
    "avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni "
    "avx512_bf16 wbnoinvd arat avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq "
    "avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect cldemote movdiri movdir64b "
    "enqcmd fsrm md_clear serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d "
    "arch_capabilities";
constexpr std::string_view kHaswell =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse "
    "sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl "
    "xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg "
    "fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c "
    "rdrand lahf_lm abm cpuid_fault epb invpcid_single pti intel_ppin ssbd ibrs ibpb stibp tpr_shadow vnmi "
    "flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm xsaveopt "
    "cqm_llc cqm_occup_llc dtherm ida arat pln pts md_clear flush_l1d";
constexpr std::string_view kQemu64 =
    "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 syscall "
    "nx lm rep_good nopl cpuid pni cx16 hypervisor lahf_lm svm 3dnowprefetch vmmcall";

const BlasReport kHaswellBlas{"OpenBLAS 0.3.21", "Haswell"};
const BlasReport kPrescottBlas{"OpenBLAS 0.3.21", "Prescott"};
const BlasReport kSkylakeBlas{"OpenBLAS 0.3.21", "SkylakeX"};

TEST(DenseKernelChoice, FlagsGiveEachMachinesInstructionSet) {
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags(kZen5)), "avx512");
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags(kZen4)), "avx512");
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags(kSapphireRapids)), "avx512");
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags(kHaswell)), "avx2");
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags(kQemu64)), "baseline");
  const CpuFeatures spr = cpuFeaturesFromFlags(kSapphireRapids), zen4 = cpuFeaturesFromFlags(kZen4),
                    haswell = cpuFeaturesFromFlags(kHaswell);
  EXPECT_TRUE(spr.avx512bf16);
  EXPECT_TRUE(spr.amxBf16);
  EXPECT_TRUE(zen4.avx512bf16);
  EXPECT_FALSE(zen4.amxBf16);
  EXPECT_FALSE(haswell.avx512bf16);
  EXPECT_FALSE(haswell.avx512f);
}

TEST(DenseKernelChoice, FlagsAreWholeWords) {
  // "avx512f" names neither avx nor avx2; "avx_vnni" is not avx.
  const CpuFeatures f = cpuFeaturesFromFlags("sse2 avx512f avx_vnni avx512_bf16x");
  EXPECT_TRUE(f.avx512f);
  EXPECT_FALSE(f.avx);
  EXPECT_FALSE(f.avx2);
  EXPECT_FALSE(f.avx512bf16);
  // AVX-512 without AVX2 + FMA + BMI2 (not a real CPU) is not the avx512 table.
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags("avx512f avx512bw avx512dq avx512vl")), "baseline");
  EXPECT_EQ(bestInstructionSet(cpuFeaturesFromFlags("")), "baseline");
}

TEST(DenseKernelChoice, NetcsOwnKernelsRunWhereItHasVectorKernels) {
  // The Sapphire Rapids VM: OpenBLAS picks Prescott, netc runs its AVX-512 products whatever it says.
  for (const BlasReport &blas : {kPrescottBlas, kHaswellBlas, kSkylakeBlas}) {
    const DenseKernelChoice c = chooseDenseKernel(cpuFeaturesFromFlags(kSapphireRapids), "avx512", blas, "");
    EXPECT_EQ(c.kind, DenseKernelKind::Netc);
    EXPECT_EQ(c.label, "netc avx512");
    EXPECT_EQ(c.warning, "");
  }
  const DenseKernelChoice zen5 =
      chooseDenseKernel(cpuFeaturesFromFlags(kZen5), "avx512", kHaswellBlas, "auto");
  EXPECT_EQ(zen5.label, "netc avx512");
  const DenseKernelChoice haswell =
      chooseDenseKernel(cpuFeaturesFromFlags(kHaswell), "avx2", kHaswellBlas, "");
  EXPECT_EQ(haswell.kind, DenseKernelKind::Netc);
  EXPECT_EQ(haswell.label, "netc avx2");
  EXPECT_EQ(haswell.warning, "");
  // --cpu-isa avx2 on an AVX-512 machine: netc's AVX2 products, which are not generic.
  EXPECT_EQ(chooseDenseKernel(cpuFeaturesFromFlags(kZen4), "avx2", kHaswellBlas, "").warning, "");
}

TEST(DenseKernelChoice, OpenBlasRunsOnTheBaselineSetAndWhenAsked) {
  // A CPU without AVX2: OpenBLAS's kernels for it, generic or not, with nothing wider to warn about.
  const DenseKernelChoice old =
      chooseDenseKernel(cpuFeaturesFromFlags(kQemu64), "baseline", kPrescottBlas, "");
  EXPECT_EQ(old.kind, DenseKernelKind::Blas);
  EXPECT_EQ(old.label, "OpenBLAS 0.3.21 Prescott");
  EXPECT_EQ(old.warning, "");
  // Asked for on the Zen 5, where OpenBLAS picks its AVX2 kernels: named, no warning.
  const DenseKernelChoice asked =
      chooseDenseKernel(cpuFeaturesFromFlags(kZen5), "avx512", kHaswellBlas, "openblas");
  EXPECT_EQ(asked.kind, DenseKernelKind::Blas);
  EXPECT_EQ(asked.label, "OpenBLAS 0.3.21 Haswell");
  EXPECT_EQ(asked.warning, "");
  // netc's baseline products when asked for on a baseline CPU: nothing wider to warn about.
  const DenseKernelChoice own =
      chooseDenseKernel(cpuFeaturesFromFlags(kQemu64), "baseline", kPrescottBlas, "netc");
  EXPECT_EQ(own.kind, DenseKernelKind::Netc);
  EXPECT_EQ(own.label, "netc baseline");
  EXPECT_EQ(own.warning, "");
}

TEST(DenseKernelChoice, GenericKernelsOnAWiderCpuAreWarnedAbout) {
  // The machine with OpenBLAS asked for: Prescott on AVX-512.
  const DenseKernelChoice blas =
      chooseDenseKernel(cpuFeaturesFromFlags(kSapphireRapids), "avx512", kPrescottBlas, "openblas");
  EXPECT_EQ(blas.warning, "dense products run OpenBLAS 0.3.21's generic SSE kernels (Prescott) on a CPU with "
                          "AVX-512, several times slower than they could: leave out --dense-kernel openblas "
                          "for netc's own kernels");
  // --cpu-isa baseline on an AVX2 machine whose OpenBLAS is generic.
  const DenseKernelChoice forced =
      chooseDenseKernel(cpuFeaturesFromFlags(kHaswell), "baseline", kPrescottBlas, "");
  EXPECT_EQ(forced.kind, DenseKernelKind::Blas);
  EXPECT_EQ(forced.warning,
            "dense products run OpenBLAS 0.3.21's generic SSE kernels (Prescott) on a CPU with "
            "AVX2, several times slower than they could: leave out --cpu-isa baseline "
            "(NETC_CPU_ISA) for netc's own kernels");
  // ... but not where OpenBLAS found the CPU's own kernels.
  EXPECT_EQ(chooseDenseKernel(cpuFeaturesFromFlags(kHaswell), "baseline", kHaswellBlas, "").warning, "");
  // netc's baseline products asked for on AVX-512.
  const DenseKernelChoice own =
      chooseDenseKernel(cpuFeaturesFromFlags(kZen4), "baseline", kHaswellBlas, "netc");
  EXPECT_EQ(own.label, "netc baseline");
  EXPECT_EQ(own.warning, "dense products run netc's baseline (SSE2) kernels on a CPU with AVX-512, several "
                         "times slower than they could: leave out --cpu-isa baseline (NETC_CPU_ISA)");
}

TEST(DenseKernelChoice, OpenBlasCoresByTheirVectors) {
  EXPECT_EQ(blasCoreInstructions("SkylakeX"), "avx512");
  EXPECT_EQ(blasCoreInstructions("Cooperlake"), "avx512");
  EXPECT_EQ(blasCoreInstructions("Haswell"), "avx2");
  EXPECT_EQ(blasCoreInstructions("Zen"), "avx2");
  EXPECT_EQ(blasCoreInstructions("Sandybridge"), "avx");
  EXPECT_EQ(blasCoreInstructions("Prescott"), "sse");
  EXPECT_EQ(blasCoreInstructions("Nehalem"), "sse");
  EXPECT_EQ(blasCoreInstructions("NEOVERSEN1"), ""); // another architecture's: not judged
  EXPECT_EQ(blasCoreInstructions(""), "");
}

TEST(DenseKernelChoice, Bf16RunsWhereTheProcessorHasAvx512Bf16) {
  // Zen 4, Zen 5 and Sapphire Rapids have AVX512-BF16: bf16 runs on the avx512 table and netc's kernels.
  for (std::string_view flags : {kZen4, kZen5, kSapphireRapids})
    EXPECT_EQ(bf16Refusal(cpuFeaturesFromFlags(flags), "avx512", DenseKernelKind::Netc), "");
  EXPECT_EQ(
      bf16Refusal(cpuFeaturesFromFlags(kHaswell), "avx2", DenseKernelKind::Netc),
      "--precision bf16: this processor has no AVX512-BF16 instructions (no avx512_bf16 in /proc/cpuinfo's "
      "flags), which netc's bf16 products need; leave out --precision bf16 to train in fp32");
  EXPECT_EQ(bf16Refusal(cpuFeaturesFromFlags(kQemu64), "baseline", DenseKernelKind::Blas),
            bf16Refusal(cpuFeaturesFromFlags(kHaswell), "avx2", DenseKernelKind::Netc));
  EXPECT_EQ(
      bf16Refusal(cpuFeaturesFromFlags(kZen4), "avx2", DenseKernelKind::Netc),
      "--precision bf16 runs on the avx512 kernels, but --cpu-isa (NETC_CPU_ISA) chose avx2: leave it out, "
      "or leave out --precision bf16");
  EXPECT_EQ(bf16Refusal(cpuFeaturesFromFlags(kSapphireRapids), "avx512", DenseKernelKind::Blas),
            "--precision bf16 runs on netc's own dense kernels; OpenBLAS has no bf16 products: leave out "
            "--dense-kernel openblas, or leave out --precision bf16");
}

} // namespace
} // namespace netc::runtime::cpu
