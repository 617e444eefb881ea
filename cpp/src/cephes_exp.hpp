// The constants of Cephes expf, shared by the vectorised exp of the x86 variants (kernels_avx2.cpp,
// kernels_avx512.cpp; the portable variant calls std::exp). exp(x) = 2^n · exp(r) with n the
// integer nearest x·log2(e) and r = x - n·ln 2 taken in two steps (ln 2 = kExpLn2Hi + kExpLn2Lo, the
// high part exact in float), then exp(r) ≈ 1 + r + r²·P(r) with P's coefficients highest first.
#pragma once

namespace fieldrank {
namespace simd {

constexpr float kExpLog2e = 1.44269504088896341f;
constexpr float kExpLn2Hi = 0.693359375f;
constexpr float kExpLn2Lo = -2.12194440e-4f;
constexpr int kExpPolyTerms = 6;
constexpr float kExpPoly[kExpPolyTerms] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                           4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

}  // namespace simd
}  // namespace fieldrank
