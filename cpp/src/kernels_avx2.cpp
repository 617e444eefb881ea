// The avx2 variant: AVX2 + FMA, compiled with -mavx2 -mfma (CMake sets them on this file only).
// A 16-lane accumulator is two ymm registers (lanes 0-7 and 8-15), so the halving tree of the
// reduction is the portable one. Only called after a CPUID check (dispatch.cpp).
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
        __m256 lo, hi;
    };
    struct D8 {
        __m256d lo, hi;
    };
    // 16 ymm registers: one query with norms uses 2 rows (4 accumulators, 8 ymm, plus loads);
    // several queries use 2 rows × 2 queries.
    static constexpr int kRowsSingle = 2;
    static constexpr int kRowsMulti = 2;
    static constexpr int kAxpyBlocks = 2;  // 16-row blocks of G·a kept in registers
    static constexpr int kQueriesStream = 4;  // queries per row when several are scored
    static constexpr int kRowsInt8 = 4;  // int8 rows per tile
    static constexpr int kQueriesMulti = 2;

    static void prefetch(const void* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
    static L16 zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static L16 set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
    static L16 load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static void store(float* p, L16 a) {
        _mm256_storeu_ps(p, a.lo);
        _mm256_storeu_ps(p + 8, a.hi);
    }
    static __m256 widen_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
    static L16 load_bf16(const std::uint16_t* p) {
        return {widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
    }
    static L16 add(L16 a, L16 b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
    static L16 sub(L16 a, L16 b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
    static L16 mul(L16 a, L16 b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
    static L16 max(L16 a, L16 b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
    static L16 fmadd(L16 a, L16 b, L16 c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
    static L16 fnmadd(L16 a, L16 b, L16 c) {
        return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)};
    }

    // Cephes expf on 8 lanes; |relative error| < 2 ulp where the result is a normal float.
    // Below float32's smallest normal (x < -87.34) the scaling 2^n is applied in two steps,
    // y·2^(n+126) (exact) then ·2^-126, so the result rounds once into the subnormals as
    // std::exp's does, and x < -103.98 gives 0. (Clamping at -87.3, as Cephes does, returned
    // 1.2e-38 for every far neighbour; times a large beta that moved CFS scores: issue 15.)
    static __m256 exp8(__m256 x) {
        x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLowest)), _mm256_set1_ps(kExpHighest));
        const __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kExpLog2e), _mm256_set1_ps(0.5f)));
        x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kExpLn2Hi), x);
        x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kExpLn2Lo), x);
        __m256 y = _mm256_set1_ps(kExpPoly[0]);
        for (int i = 1; i < kExpPolyTerms; ++i) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kExpPoly[i]));
        y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
        const __m256i n = _mm256_cvtps_epi32(fx);
        const __m256i min_normal_exponent = _mm256_set1_epi32(-126);
        const __m256i n_low = _mm256_and_si256(_mm256_cmpgt_epi32(min_normal_exponent, n), min_normal_exponent);
        const __m256i n_high = _mm256_sub_epi32(n, n_low);
        const __m256i bias = _mm256_set1_epi32(127);
        const __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n_high, bias), 23));
        const __m256 low = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n_low, bias), 23));
        return _mm256_mul_ps(_mm256_mul_ps(y, high), low);
    }
    static L16 exp(L16 a) { return {exp8(a.lo), exp8(a.hi)}; }

    // h8 -> 4 -> 2 -> 1, the portable tree.
    static float reduce(L16 a) {
        const __m256 h8 = _mm256_add_ps(a.lo, a.hi);
        const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
        const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
        const __m128 h1 = _mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1));
        return _mm_cvtss_f32(h1);
    }
    // Four trees at once, each adding exactly the pairs reduce() adds.
    static void reduce4(const L16* a, float* out) {
        const __m256 h0 = _mm256_add_ps(a[0].lo, a[0].hi);
        const __m256 h1 = _mm256_add_ps(a[1].lo, a[1].hi);
        const __m256 h2 = _mm256_add_ps(a[2].lo, a[2].hi);
        const __m256 h3 = _mm256_add_ps(a[3].lo, a[3].hi);
        const __m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
        const __m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(h2, h3, 0x20), _mm256_permute2f128_ps(h2, h3, 0x31));
        const __m256 t01 = _mm256_add_ps(s01, _mm256_permute_ps(s01, _MM_SHUFFLE(1, 0, 3, 2)));
        const __m256 t23 = _mm256_add_ps(s23, _mm256_permute_ps(s23, _MM_SHUFFLE(1, 0, 3, 2)));
        const __m256 u01 = _mm256_add_ps(t01, _mm256_permute_ps(t01, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m256 u23 = _mm256_add_ps(t23, _mm256_permute_ps(t23, _MM_SHUFFLE(2, 3, 0, 1)));
        alignas(32) float lanes01[8];
        alignas(32) float lanes23[8];
        _mm256_store_ps(lanes01, u01);
        _mm256_store_ps(lanes23, u23);
        out[0] = lanes01[0];
        out[1] = lanes01[4];
        out[2] = lanes23[0];
        out[3] = lanes23[4];
    }

    static D8 set1d(double x) { return {_mm256_set1_pd(x), _mm256_set1_pd(x)}; }
    static void stored(double* p, D8 a) {
        _mm256_storeu_pd(p, a.lo);
        _mm256_storeu_pd(p + 4, a.hi);
    }
    static D8 zerod() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
    static D8 loadd(const double* p) { return {_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
    static D8 load_f32_as_d(const float* p) { return {_mm256_cvtps_pd(_mm_loadu_ps(p)), _mm256_cvtps_pd(_mm_loadu_ps(p + 4))}; }
    static D8 fmaddd(D8 a, D8 b, D8 c) { return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)}; }
    static D8 muld(D8 a, D8 b) { return {_mm256_mul_pd(a.lo, b.lo), _mm256_mul_pd(a.hi, b.hi)}; }
    static D8 addd(D8 a, D8 b) { return {_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
    static double reduced(D8 a) {
        const __m256d h4 = _mm256_add_pd(a.lo, a.hi);
        const __m128d h2 = _mm_add_pd(_mm256_castpd256_pd128(h4), _mm256_extractf128_pd(h4, 1));
        return _mm_cvtsd_f64(_mm_add_sd(h2, _mm_unpackhi_pd(h2, h2)));
    }

    static std::int32_t hsum_epi32(__m256i v) {
        const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1))));
    }

    // Σ q·e exactly: maddubs(|q|, sign(e, q)) never saturates because |q|, |e| <= 127.
    template <int R>
    static void int8_tile(const std::int8_t* const* rows, const std::int8_t* const* ahead, const std::int8_t* q8, Index d,
                          std::int32_t* out) {
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i acc[R];
        for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
        Index j = 0;
        for (; j + 32 <= d; j += 32) {
            if (ahead != nullptr && (j & 63) == 0) {
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + j), _MM_HINT_T0);
            }
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + j));
            const __m256i q_abs = _mm256_abs_epi8(q);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + j));
                const __m256i pairs = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(e, q));
                acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(pairs, ones));
            }
        }
        for (int r = 0; r < R; ++r) {
            std::int32_t total = hsum_epi32(acc[r]);
            for (Index t = j; t < d; ++t) total += static_cast<std::int32_t>(rows[r][t]) * static_cast<std::int32_t>(q8[t]);
            out[r] = total;
        }
    }
};

#include "simd_generic.inl"

}  // namespace

extern const KernelTable avx2_kernels;
const KernelTable avx2_kernels = generic_kernels("avx2", score_f32_stream, score_int8_tiled<>);

}  // namespace simd
}  // namespace fieldrank
