// The reduced-precision scans of the avx512_bf16 variant: AVX-512 BF16 (vdpbf16ps) and VNNI
// (vpdpbusd), compiled with those flags on this file only. The fp32 kernels of that variant are
// the avx512 ones; dispatch.cpp combines the two tables. Only called after a CPUID check.
#include <immintrin.h>

#include <cstdint>

#include <fieldrank/kernel_table.hpp>

namespace fieldrank {
namespace simd {
namespace {

inline __mmask16 lane_mask16(Index left) {
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

// Rows of bf16 against the query rounded to bf16: 32 products per instruction, accumulated in fp32.
template <int R>
inline void bf16_tile(const std::uint16_t* const* rows, const float* q, Index d, float* out) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (Index j = 0; j < d; j += 32) {
        const Index left = d - j;
        const __mmask16 lo = lane_mask16(left);
        const __mmask16 hi = lane_mask16(left > 16 ? left - 16 : 0);
        const __mmask32 pairs = left >= 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
        const __m512bh qv = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, q + j + 16), _mm512_maskz_loadu_ps(lo, q + j));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512i e = _mm512_maskz_loadu_epi16(pairs, rows[r] + j);
            acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)e, qv);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

void score_bf16_dp(const std::uint16_t* base, Index stride, const Index* ids, Index n, Index d, const float* q,
                   float* out) {
    constexpr int R = 4;
    const std::uint16_t* rows[R];
    Index r0 = 0;
    for (; r0 + R <= n; r0 += R) {
        for (int i = 0; i < R; ++i) rows[i] = base + (ids != nullptr ? ids[r0 + i] : r0 + i) * stride;
        bf16_tile<R>(rows, q, d, out + r0);
    }
    for (; r0 < n; ++r0) {
        rows[0] = base + (ids != nullptr ? ids[r0] : r0) * stride;
        bf16_tile<1>(rows, q, d, out + r0);
    }
}

// Σ q·e exactly: vpdpbusd multiplies unsigned (q + 128) by signed e, and 128·Σe is taken off.
template <int R>
inline void int8_tile(const std::int8_t* const* rows, const std::int8_t* q8, Index d, std::int32_t* out) {
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (Index j = 0; j < d; j += 64) {
        const Index left = d - j;
        const __mmask64 mask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
        const __m512i q_u8 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, q8 + j), offset);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], q_u8, _mm512_maskz_loadu_epi8(mask, rows[r] + j));
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_epi32(acc[r]);
}

void score_int8_vnni(const std::int8_t* base, Index stride, const Index* ids, Index n, Index d, const std::int8_t* q8,
                     const float* row_scale, const std::int32_t* row_sum, float q_scale, float* out) {
    constexpr int R = 4;
    const std::int8_t* rows[R];
    std::int32_t dots[R];
    Index r0 = 0;
    for (; r0 + R <= n; r0 += R) {
        for (int i = 0; i < R; ++i) rows[i] = base + (ids != nullptr ? ids[r0 + i] : r0 + i) * stride;
        int8_tile<R>(rows, q8, d, dots);
        for (int i = 0; i < R; ++i) {
            const Index id = ids != nullptr ? ids[r0 + i] : r0 + i;
            out[r0 + i] = static_cast<float>(dots[i] - 128 * row_sum[id]) * row_scale[id] * q_scale;
        }
    }
    for (; r0 < n; ++r0) {
        const Index id = ids != nullptr ? ids[r0] : r0;
        rows[0] = base + id * stride;
        int8_tile<1>(rows, q8, d, dots);
        out[r0] = static_cast<float>(dots[0] - 128 * row_sum[id]) * row_scale[id] * q_scale;
    }
}

}  // namespace

// Only the two reduced-precision entries are set; dispatch.cpp fills the rest from avx512.
extern const KernelTable avx512_bf16_overrides;
const KernelTable avx512_bf16_overrides = {
    "avx512_bf16", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, score_bf16_dp, score_int8_vnni,
};

}  // namespace simd
}  // namespace fieldrank
