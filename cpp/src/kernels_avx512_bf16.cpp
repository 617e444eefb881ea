// The reduced-precision scans of the avx512_bf16 variant: AVX-512 BF16 (vdpbf16ps) and VNNI
// (vpdpbusd), compiled with those flags on this file only. The fp32 kernels of that variant are
// the avx512 ones; dispatch.cpp combines the two tables. Only called after a CPUID check.
#include <immintrin.h>

#include <cstdint>

#include <fieldrank/kernel_table.hpp>

namespace fieldrank {
namespace simd {
namespace {

constexpr int kRows = 8;  // rows per tile: 8 independent dot-product chains hide the instruction latency

// Runs tile(rows, ahead, first) over tiles of kRows rows (then single rows); `ahead` holds the
// next tile's rows for prefetching, or is null.
template <typename T, typename TileR, typename Tile1>
inline void for_row_tiles(const T* base, Index stride, const Index* ids, Index n, TileR tile_r, Tile1 tile_1) {
    const T* rows[kRows];
    const T* ahead[kRows];
    Index r0 = 0;
    if (ids == nullptr) {
        // Contiguous rows: one after the other, a single memory stream that the hardware
        // prefetchers follow (see score_f32_stream; no software prefetch).
        for (; r0 < n; ++r0) {
            rows[0] = base + r0 * stride;
            tile_1(rows, nullptr, r0);
        }
        return;
    }
    for (; r0 + kRows <= n; r0 += kRows) {
        for (int i = 0; i < kRows; ++i) rows[i] = base + (ids != nullptr ? ids[r0 + i] : r0 + i) * stride;
        const bool next = r0 + 2 * kRows <= n;
        if (next)
            for (int i = 0; i < kRows; ++i)
                ahead[i] = base + (ids != nullptr ? ids[r0 + kRows + i] : r0 + kRows + i) * stride;
        tile_r(rows, next ? ahead : nullptr, r0);
    }
    for (; r0 < n; ++r0) {
        rows[0] = base + (ids != nullptr ? ids[r0] : r0) * stride;
        tile_1(rows, nullptr, r0);
    }
}

inline __mmask16 lane_mask16(Index left) {
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

// Rows of bf16 against the query rounded to bf16: 32 products per instruction, accumulated in
// fp32. qb holds the query already converted (d rounded up to 32, zero-padded).
template <int R>
inline void bf16_tile(const std::uint16_t* const* rows, const std::uint16_t* const* ahead, const __m512bh* qb, Index d,
                      float* out) {
    // Two accumulators per row (even and odd 32-column blocks): two dependency chains, so one
    // row already keeps two dot-product instructions in flight. A fixed order for every row.
    __m512 acc[R], odd[R];
    for (int r = 0; r < R; ++r) acc[r] = odd[r] = _mm512_setzero_ps();
    Index j = 0;
    for (; j + 64 <= d; j += 64) {
        if (ahead != nullptr) {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + j), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + j + 32), _MM_HINT_T0);
            }
        }
        const __m512bh q0 = qb[j / 32];
        const __m512bh q1 = qb[j / 32 + 1];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_loadu_si512(rows[r] + j), q0);
            odd[r] = _mm512_dpbf16_ps(odd[r], (__m512bh)_mm512_loadu_si512(rows[r] + j + 32), q1);
        }
    }
    for (; j < d; j += 32) {
        const Index left = d - j;
        const __mmask32 pairs = left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((__mmask64{1} << left) - 1);
        const __m512bh qv = qb[j / 32];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
            acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_maskz_loadu_epi16(pairs, rows[r] + j), qv);
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r], odd[r]));
}

constexpr Index kMaxStackBlocks = 128;  // queries up to d = 4096 are converted once on the stack

inline void convert_query(const float* q, Index d, __m512bh* qb) {
    for (Index j = 0; j < d; j += 32) {
        const Index left = d - j;
        const __mmask16 lo = lane_mask16(left);
        const __mmask16 hi = lane_mask16(left > 16 ? left - 16 : 0);
        qb[j / 32] = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, q + j + 16), _mm512_maskz_loadu_ps(lo, q + j));
    }
}

void score_bf16_dp(const std::uint16_t* base, Index stride, const Index* ids, Index n, Index d, const float* q,
                   float* out) {
    // The query in bf16, once per call (in pieces of kMaxStackBlocks · 32 columns for wider rows).
    __m512bh qb[kMaxStackBlocks];
    if (d <= kMaxStackBlocks * 32) {
        convert_query(q, d, qb);
        for_row_tiles(
            base, stride, ids, n,
            [&](const std::uint16_t* const* rows, const std::uint16_t* const* ahead, Index r0) {
                bf16_tile<kRows>(rows, ahead, qb, d, out + r0);
            },
            [&](const std::uint16_t* const* rows, const std::uint16_t* const* ahead, Index r0) {
                bf16_tile<1>(rows, ahead, qb, d, out + r0);
            });
        return;
    }
    for (Index r = 0; r < n; ++r) out[r] = 0.0f;
    for (Index c0 = 0; c0 < d; c0 += kMaxStackBlocks * 32) {
        const Index width = d - c0 < kMaxStackBlocks * 32 ? d - c0 : kMaxStackBlocks * 32;
        convert_query(q + c0, width, qb);
        for (Index r = 0; r < n; ++r) {
            const std::uint16_t* row = base + (ids != nullptr ? ids[r] : r) * stride + c0;
            float part;
            bf16_tile<1>(&row, nullptr, qb, width, &part);
            out[r] += part;
        }
    }
}

// Σ q·e exactly: vpdpbusd multiplies unsigned (q + 128) by signed e, and 128·Σe is taken off.
template <int R>
inline void int8_tile(const std::int8_t* const* rows, const std::int8_t* const* ahead, const std::int8_t* q8, Index d,
                      std::int32_t* out) {
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    Index j = 0;
    for (; j + 64 <= d; j += 64) {
        if (ahead != nullptr) {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(ahead[r] + j), _MM_HINT_T0);
        }
        const __m512i q_u8 = _mm512_xor_si512(_mm512_loadu_si512(q8 + j), offset);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], q_u8, _mm512_loadu_si512(rows[r] + j));
    }
    if (j < d) {
        const __mmask64 mask = (__mmask64{1} << (d - j)) - 1;
        const __m512i q_u8 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, q8 + j), offset);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
            acc[r] = _mm512_dpbusd_epi32(acc[r], q_u8, _mm512_maskz_loadu_epi8(mask, rows[r] + j));
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_epi32(acc[r]);
}

void score_int8_vnni(const std::int8_t* base, Index stride, const Index* ids, Index n, Index d, const std::int8_t* q8,
                     const float* row_scale, const std::int32_t* row_sum, float q_scale, float* out) {
    auto finish = [&](Index r0, int count, const std::int32_t* dots) {
        for (int i = 0; i < count; ++i) {
            const Index id = ids != nullptr ? ids[r0 + i] : r0 + i;
            out[r0 + i] = static_cast<float>(dots[i] - 128 * row_sum[id]) * row_scale[id] * q_scale;
        }
    };
    for_row_tiles(
        base, stride, ids, n,
        [&](const std::int8_t* const* rows, const std::int8_t* const* ahead, Index r0) {
            std::int32_t dots[kRows];
            int8_tile<kRows>(rows, ahead, q8, d, dots);
            finish(r0, kRows, dots);
        },
        [&](const std::int8_t* const* rows, const std::int8_t* const* ahead, Index r0) {
            std::int32_t dot;
            int8_tile<1>(rows, ahead, q8, d, &dot);
            finish(r0, 1, &dot);
        });
}

}  // namespace

// Only the two reduced-precision entries are set; dispatch.cpp fills the rest from avx512.
extern const KernelTable avx512_bf16_overrides;
const KernelTable avx512_bf16_overrides = {
    "avx512_bf16", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, score_bf16_dp, score_int8_vnni, nullptr,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace simd
}  // namespace fieldrank
