// The avx512 variant: AVX-512 F/BW/DQ/VL (x86-64-v4), compiled with those flags on this file only.
// A 16-lane accumulator is one zmm register; reduce() adds the same pairs as the portable tree.
// Only called after a CPUID check that also confirms the OS saves the zmm state (dispatch.cpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include <fieldrank/kernel_table.hpp>

#include "cephes_exp.hpp"

namespace fieldrank {
namespace simd {
namespace {

struct Ops {
    struct L16 {
        __m512 v;
    };
    struct D8 {
        __m512d v;
    };
    // 32 zmm registers: one query with norms uses 4 rows (8 accumulators); several queries and
    // the Gram matrix use 4 rows × 4 queries (16 accumulators, 4 more for norms).
    static constexpr int kRowsSingle = 8;
    static constexpr int kRowsMulti = 4;
    static constexpr int kAxpyBlocks = 10;  // 16-row blocks of G·a kept in registers
    static constexpr int kQueriesStream = 16;  // queries per row when several are scored
    static constexpr int kRowsInt8 = 8;  // int8 rows per tile
    static constexpr int kQueriesMulti = 4;

    static void prefetch(const void* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
    static L16 zero() { return {_mm512_setzero_ps()}; }
    static L16 set1(float x) { return {_mm512_set1_ps(x)}; }
    static L16 load(const float* p) { return {_mm512_loadu_ps(p)}; }
    static void store(float* p, L16 a) { _mm512_storeu_ps(p, a.v); }
    static L16 load_bf16(const std::uint16_t* p) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))};
    }
    static L16 add(L16 a, L16 b) { return {_mm512_add_ps(a.v, b.v)}; }
    static L16 sub(L16 a, L16 b) { return {_mm512_sub_ps(a.v, b.v)}; }
    static L16 mul(L16 a, L16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
    static L16 max(L16 a, L16 b) { return {_mm512_max_ps(a.v, b.v)}; }
    static L16 fmadd(L16 a, L16 b, L16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
    static L16 fnmadd(L16 a, L16 b, L16 c) { return {_mm512_fnmadd_ps(a.v, b.v, c.v)}; }

    // Cephes expf polynomial with an exact 2^n scaling (vscalefps), which rounds once into the
    // subnormals; x < -103.98 gives 0 (a clamp at -103 returned 1.4e-45 there: issue 15).
    static L16 exp(L16 a) {
        __m512 x = _mm512_min_ps(_mm512_max_ps(a.v, _mm512_set1_ps(kExpLowest)), _mm512_set1_ps(kExpHighest));
        const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kExpLog2e)),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(kExpLn2Hi), x);
        x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(kExpLn2Lo), x);
        __m512 y = _mm512_set1_ps(kExpPoly[0]);
        for (int i = 1; i < kExpPolyTerms; ++i) y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(kExpPoly[i]));
        y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
        return {_mm512_scalef_ps(y, fx)};
    }

    // h8 -> 4 -> 2 -> 1, the portable tree.
    static float reduce(L16 a) {
        const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(a.v), _mm512_extractf32x8_ps(a.v, 1));
        const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
        const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
        const __m128 h1 = _mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1));
        return _mm_cvtss_f32(h1);
    }
    // Four trees at once, each adding exactly the pairs reduce() adds: 128-bit chunk c_k holds
    // lanes 4k..4k+3, so c0 + c2 and c1 + c3 are the h8 step, and so on.
    static void reduce4(const L16* a, float* out) {
        const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a[0].v, a[1].v, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm512_shuffle_f32x4(a[0].v, a[1].v, _MM_SHUFFLE(3, 2, 3, 2)));
        const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(a[2].v, a[3].v, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm512_shuffle_f32x4(a[2].v, a[3].v, _MM_SHUFFLE(3, 2, 3, 2)));
        const __m512 h4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
        const __m512 h2 = _mm512_add_ps(h4, _mm512_permute_ps(h4, _MM_SHUFFLE(1, 0, 3, 2)));
        const __m512 h1 = _mm512_add_ps(h2, _mm512_permute_ps(h2, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m512 picked = _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), h1);
        _mm_storeu_ps(out, _mm512_castps512_ps128(picked));
    }

    static D8 set1d(double x) { return {_mm512_set1_pd(x)}; }
    static void stored(double* p, D8 a) { _mm512_storeu_pd(p, a.v); }
    static D8 zerod() { return {_mm512_setzero_pd()}; }
    static D8 loadd(const double* p) { return {_mm512_loadu_pd(p)}; }
    static D8 load_f32_as_d(const float* p) { return {_mm512_cvtps_pd(_mm256_loadu_ps(p))}; }
    static D8 fmaddd(D8 a, D8 b, D8 c) { return {_mm512_fmadd_pd(a.v, b.v, c.v)}; }
    static D8 muld(D8 a, D8 b) { return {_mm512_mul_pd(a.v, b.v)}; }
    static D8 addd(D8 a, D8 b) { return {_mm512_add_pd(a.v, b.v)}; }
    static double reduced(D8 a) { return _mm512_reduce_add_pd(a.v); }

    // Σ q·e exactly with AVX-512BW: e is negated where q < 0, then maddubs(|q|, ±e) (no saturation,
    // |q|, |e| <= 127) and madd against ones widen the pairs to int32.
    template <int R>
    static void int8_tile(const std::int8_t* const* rows, const std::int8_t* const* ahead, const std::int8_t* q8, Index d,
                          std::int32_t* out) {
        const __m512i ones = _mm512_set1_epi16(1);
        const __m512i zero = _mm512_setzero_si512();
        __m512i acc[R];
        for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
        for (Index j = 0; j < d; j += 64) {
            const Index left = d - j;
            const __mmask64 mask = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
            if (ahead != nullptr) {
#pragma GCC unroll 16
                for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + j), _MM_HINT_T0);
            }
            const __m512i q = _mm512_maskz_loadu_epi8(mask, q8 + j);
            const __mmask64 negative = _mm512_movepi8_mask(q);
            const __m512i q_abs = _mm512_abs_epi8(q);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const __m512i e = _mm512_maskz_loadu_epi8(mask, rows[r] + j);
                const __m512i signed_e = _mm512_mask_sub_epi8(e, negative, zero, e);
                acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(_mm512_maddubs_epi16(q_abs, signed_e), ones));
            }
        }
        for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_epi32(acc[r]);
    }
};

#include "simd_generic.inl"

}  // namespace

extern const KernelTable avx512_kernels;
const KernelTable avx512_kernels = generic_kernels("avx512", score_f32_stream, score_int8_tiled<>);

}  // namespace simd
}  // namespace fieldrank
