// The portable variant: plain C++ compiled with the build's baseline flags (SSE2 on x86-64, the
// target's default elsewhere). The 16-lane arrays let the compiler vectorise without changing the
// order of any floating-point sum (the build passes -ffp-contract=off, so a·b + c is never fused).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fieldrank/kernel_table.hpp>

namespace fieldrank {
namespace simd {
namespace {

#if defined(__GNUC__) || defined(__clang__)
// GCC/Clang vector extensions: 16 floats as one value, lowered to whatever the baseline target
// has (4 × SSE2 on x86-64, 4 × NEON on AArch64). Lane-wise operations, so the order of every sum
// is the one written; with -ffp-contract=off a·b + c stays unfused.
#define FIELDRANK_VECTOR_EXTENSIONS 1
typedef float V16f __attribute__((vector_size(64)));
typedef double V8d __attribute__((vector_size(64)));
#else
#define FIELDRANK_VECTOR_EXTENSIONS 0
#endif

struct Ops {
#if FIELDRANK_VECTOR_EXTENSIONS
    struct L16 {
        V16f v;
    };
    struct D8 {
        V8d v;
    };
#else
    struct L16 {
        float v[16];
    };
    struct D8 {
        double v[8];
    };
#endif
    // Rows per single-query tile: 2 rows with norms hold 16 xmm accumulators (baseline x86-64 has
    // 16); 4 spilled and read 12.7 GB/s from L2 against 17.4 for 2 (docs/design.md, "The scan").
    static constexpr int kRowsSingle = 2;
    static constexpr int kRowsMulti = 2;
    static constexpr int kAxpyBlocks = 2;  // 16-row blocks of G·a kept in registers
    static constexpr int kQueriesStream = 4;  // queries per row when several are scored
    static constexpr int kQueriesMulti = 2;

    static void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(p);
#else
        (void)p;
#endif
    }
    // out.v[l] = lane(l) for every lane: the lane-wise loops of this struct, written once.
    template <typename V, int N, typename F>
    static V each_lane(F lane) {
        V out;
        for (int l = 0; l < N; ++l) out.v[l] = lane(l);
        return out;
    }
    template <typename F>
    static L16 each16(F lane) {
        return each_lane<L16, 16>(lane);
    }
    template <typename F>
    static D8 each8(F lane) {
        return each_lane<D8, 8>(lane);
    }

    static L16 zero() {
        return each16([](int) { return 0.0f; });
    }
    static L16 set1(float x) {
        return each16([x](int) { return x; });
    }
    static L16 load(const float* p) {
        L16 out;
        std::memcpy(&out.v, p, sizeof out.v);
        return out;
    }
    static void store(float* p, const L16& a) { std::memcpy(p, &a.v, sizeof a.v); }
    static L16 load_bf16(const std::uint16_t* p) {
        return each16([p](int l) {
            const std::uint32_t bits = static_cast<std::uint32_t>(p[l]) << 16;
            float x;
            std::memcpy(&x, &bits, sizeof x);
            return x;
        });
    }
#if FIELDRANK_VECTOR_EXTENSIONS
    static L16 add(const L16& a, const L16& b) { return {a.v + b.v}; }
    static L16 sub(const L16& a, const L16& b) { return {a.v - b.v}; }
    static L16 mul(const L16& a, const L16& b) { return {a.v * b.v}; }
    static L16 fmadd(const L16& a, const L16& b, const L16& c) { return {a.v * b.v + c.v}; }
    static L16 fnmadd(const L16& a, const L16& b, const L16& c) { return {c.v - a.v * b.v}; }
#else
    static L16 add(const L16& a, const L16& b) {
        return each16([&](int l) { return a.v[l] + b.v[l]; });
    }
    static L16 sub(const L16& a, const L16& b) {
        return each16([&](int l) { return a.v[l] - b.v[l]; });
    }
    static L16 mul(const L16& a, const L16& b) {
        return each16([&](int l) { return a.v[l] * b.v[l]; });
    }
    static L16 fmadd(const L16& a, const L16& b, const L16& c) {
        return each16([&](int l) { return a.v[l] * b.v[l] + c.v[l]; });
    }
    static L16 fnmadd(const L16& a, const L16& b, const L16& c) {
        return each16([&](int l) { return c.v[l] - a.v[l] * b.v[l]; });
    }
#endif
    static L16 max(const L16& a, const L16& b) {
        return each16([&](int l) -> float { return a.v[l] > b.v[l] ? a.v[l] : b.v[l]; });
    }
    static L16 exp(const L16& a) {
        return each16([&](int l) { return std::exp(static_cast<float>(a.v[l])); });
    }
    // The halving tree: lanes l and l + 8, then l and l + 4, l and l + 2, 0 and 1.
    static float reduce(const L16& a) {
        float h[8];
        for (int l = 0; l < 8; ++l) h[l] = a.v[l] + a.v[l + 8];
        for (int l = 0; l < 4; ++l) h[l] = h[l] + h[l + 4];
        for (int l = 0; l < 2; ++l) h[l] = h[l] + h[l + 2];
        return h[0] + h[1];
    }
    static void reduce4(const L16* a, float* out) {
        for (int i = 0; i < 4; ++i) out[i] = reduce(a[i]);
    }
    static D8 zerod() {
        return each8([](int) { return 0.0; });
    }
    static D8 set1d(double x) {
        return each8([x](int) { return x; });
    }
    static void stored(double* p, const D8& a) { std::memcpy(p, &a.v, sizeof a.v); }
    static D8 loadd(const double* p) {
        D8 out;
        std::memcpy(&out.v, p, sizeof out.v);
        return out;
    }
    static D8 load_f32_as_d(const float* p) {
        return each8([p](int l) { return static_cast<double>(p[l]); });
    }
#if FIELDRANK_VECTOR_EXTENSIONS
    static D8 fmaddd(const D8& a, const D8& b, const D8& c) { return {a.v * b.v + c.v}; }
    static D8 muld(const D8& a, const D8& b) { return {a.v * b.v}; }
    static D8 addd(const D8& a, const D8& b) { return {a.v + b.v}; }
#else
    static D8 muld(const D8& a, const D8& b) {
        return each8([&](int l) { return a.v[l] * b.v[l]; });
    }
    static D8 addd(const D8& a, const D8& b) {
        return each8([&](int l) { return a.v[l] + b.v[l]; });
    }
    static D8 fmaddd(const D8& a, const D8& b, const D8& c) {
        return each8([&](int l) { return a.v[l] * b.v[l] + c.v[l]; });
    }
#endif
    static double reduced(const D8& a) {
        double h[4];
        for (int l = 0; l < 4; ++l) h[l] = a.v[l] + a.v[l + 4];
        return (h[0] + h[2]) + (h[1] + h[3]);
    }
};

#include "simd_generic.inl"

void score_int8_portable(const std::int8_t* base, Index stride, const Index* ids, Index n, Index d,
                         const std::int8_t* q8, const float* row_scale, const std::int32_t* row_sum, float q_scale,
                         float* out) {
    (void)row_sum;
    for (Index r = 0; r < n; ++r) {
        const Index id = ids != nullptr ? ids[r] : r;
        const std::int8_t* row = base + id * stride;
        std::int32_t acc = 0;
        for (Index j = 0; j < d; ++j) acc += static_cast<std::int32_t>(row[j]) * static_cast<std::int32_t>(q8[j]);
        out[r] = static_cast<float>(acc) * row_scale[id] * q_scale;
    }
}

}  // namespace

extern const KernelTable portable_kernels;
const KernelTable portable_kernels = generic_kernels("portable", score_f32_stream, score_int8_portable);

}  // namespace simd
}  // namespace fieldrank
