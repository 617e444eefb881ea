// The hot kernels behind one table of function pointers, with one table per instruction set:
// `portable` (baseline flags: SSE2 on x86-64, NEON or whatever the target has elsewhere),
// `avx2` (AVX2 + FMA), `avx512` (AVX-512 F/BW/DQ/VL) and `avx512_bf16` (avx512 plus the BF16
// and VNNI dot-product instructions, used by the reduced-precision scans). Each variant lives in
// its own translation unit under cpp/src/ compiled with its own flags; the variant in use is
// chosen once by a CPUID check (or by FIELDRANK_KERNEL) and can be switched with
// set_kernel_variant(). The default build never uses -march=native.
//
// Every fp32 dot product in every variant has the same address-independent order: 16 lanes,
// lane l accumulating elements j ≡ l (mod 16), the lanes summed by the fixed halving tree of
// kernels.hpp, then the scalar tail d mod 16 added. Identical rows therefore score bit-identically
// within one variant whatever their position; variants differ only in using fused multiply-add.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_table.hpp"

namespace fieldrank {
namespace simd {


// The table in use. Calls made while another thread switches variant keep the table they read.
const KernelTable& kernels();

// Variant names this build contains, and whether this CPU can run a given one.
std::vector<std::string> compiled_variants();
bool cpu_supports(const std::string& variant);
std::vector<std::string> supported_variants();

// Switches the variant; throws std::invalid_argument for an unknown name, a variant this build
// lacks, or one this CPU cannot run.
void set_kernel_variant(const std::string& variant);
std::string kernel_variant();

// The best supported variant, or FIELDRANK_KERNEL when that environment variable is set.
// Called once at import; throws like set_kernel_variant for a bad FIELDRANK_KERNEL.
void initialize_kernels();

// Compiler flags each compiled variant was built with, as "variant: flags" lines.
std::vector<std::string> variant_flags();

// CPU features the dispatcher looked at, e.g. "avx2 fma avx512f ...".
std::string cpu_features();

}  // namespace simd
}  // namespace fieldrank
