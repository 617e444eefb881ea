// Scalar building blocks with a fixed summation order. The order depends only on d, never on
// the address of a row, so identical rows score bit-identically wherever they sit in memory;
// that is what keeps exact ties exact for the tie rule. The fixed lane count lets the compiler
// vectorise the lane loop without reassociating floating-point sums.
#pragma once

#include "types.hpp"

namespace fieldrank {
namespace kernels {

inline constexpr int kLanes = 16;

inline float reduce_lanes(float (&acc)[kLanes]) {
    for (int width = kLanes / 2; width > 0; width /= 2)
        for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
    return acc[0];
}

inline float dot(const float* a, const float* b, Index d) {
    float acc[kLanes] = {};
    Index j = 0;
    for (; j + kLanes <= d; j += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += a[j + l] * b[j + l];
    float tail = 0.0f;
    for (; j < d; ++j) tail += a[j] * b[j];
    return reduce_lanes(acc) + tail;
}

// One read of `row` gives both its dot product with `query` and its squared norm.
inline void dot_and_norm(const float* row, const float* query, Index d, float& dot_out, float& norm_sq_out) {
    float dot_acc[kLanes] = {};
    float norm_acc[kLanes] = {};
    Index j = 0;
    for (; j + kLanes <= d; j += kLanes) {
        for (int l = 0; l < kLanes; ++l) {
            const float x = row[j + l];
            dot_acc[l] += x * query[j + l];
            norm_acc[l] += x * x;
        }
    }
    float dot_tail = 0.0f;
    float norm_tail = 0.0f;
    for (; j < d; ++j) {
        dot_tail += row[j] * query[j];
        norm_tail += row[j] * row[j];
    }
    dot_out = reduce_lanes(dot_acc) + dot_tail;
    norm_sq_out = reduce_lanes(norm_acc) + norm_tail;
}

// out[i] = rows[i] · v for every row of a row-major (n, d) block.
inline void dot_rows(const float* rows, Index n, Index d, const float* v, float* out) {
    for (Index i = 0; i < n; ++i) out[i] = dot(rows + i * d, v, d);
}

}  // namespace kernels
}  // namespace fieldrank
