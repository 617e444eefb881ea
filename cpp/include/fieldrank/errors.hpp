// Argument checks shared by the kernels. Every message names the argument, what was
// expected and what was given; std::invalid_argument becomes ValueError in Python.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "defaults.hpp"
#include "types.hpp"

namespace fieldrank {

template <typename... Parts>
[[noreturn]] inline void fail(const Parts&... parts) {
    std::ostringstream message;
    (message << ... << parts);
    throw std::invalid_argument(message.str());
}

inline void require_positive(const char* name, Index value) {
    if (value <= 0) fail(name, " must be a positive integer, got ", value);
}

inline void require_unit_interval(const char* name, double value) {
    if (!(value >= 0.0 && value <= 1.0)) fail(name, " must lie in [0, 1], got ", value);
}

// Real parameters are cast to float in the kernels: they must stay finite there.
inline void require_float32_range(const char* name, double value) {
    const double float32_max = std::numeric_limits<float>::max();
    if (std::abs(value) > float32_max)
        fail(name, " must be finite as a float32 (at most ", float32_max, " in magnitude), got ", value);
}

inline void require_positive_real(const char* name, double value) {
    if (!(value > 0.0) || !std::isfinite(value)) fail(name, " must be a finite number > 0, got ", value);
    require_float32_range(name, value);
    const double float32_true_min = std::numeric_limits<float>::denorm_min();
    if (value < float32_true_min)
        fail(name, " must stay positive as a float32 (at least ", float32_true_min, "), got ", value);
}

inline void require_non_negative_real(const char* name, double value) {
    if (!(value >= 0.0) || !std::isfinite(value)) fail(name, " must be a finite number >= 0, got ", value);
    require_float32_range(name, value);
}

inline void require_non_negative(const char* name, Index value) {
    if (value < 0) fail(name, " must be a non-negative integer, got ", value);
}

inline void require_size(const char* name, Index size, Index expected) {
    if (size != expected) fail(name, " must have length ", expected, ", got ", size);
}

// Every one of the `count` row ids at `rows` lies in [0, n).
inline void require_rows_below(const char* name, const Index* rows, Index count, Index n) {
    for (Index i = 0; i < count; ++i)
        if (rows[i] < 0 || rows[i] >= n) fail(name, "[", i, "] = ", rows[i], " is not a row in [0, ", n, ")");
}

inline void require_rows(const char* name, const MatrixRef& matrix) {
    if (matrix.rows() == 0) fail(name, " must have at least one row, got shape (0, ", matrix.cols(), ")");
    if (matrix.cols() == 0) fail(name, " must have at least one column, got shape (", matrix.rows(), ", 0)");
}

inline void require_query(const char* name, const VectorRef& query, Index dim, const char* corpus_name) {
    if (query.size() != dim)
        fail(name, " must have length ", dim, " to match ", corpus_name, ".shape[1], got length ", query.size());
    double norm_sq = 0.0;
    for (Index i = 0; i < query.size(); ++i) {
        const double value = query[i];
        if (!std::isfinite(value)) fail(name, " must be finite, got ", value, " at position ", i);
        norm_sq += value * value;
    }
    if (norm_sq == 0.0) fail(name, " must have a non-zero norm, got the zero vector");
    // The kernels compute in float32: with |q|^2 inside float32, as for the rows, every dot
    // product |q·e| <= |q| |e| stays inside it too.
    const double float32_max = std::numeric_limits<float>::max();
    if (norm_sq > float32_max)
        fail(name, " must have a squared norm within the float32 range (at most ", float32_max, "), got ", norm_sq);
}

// Squared-norm bounds of a unit row within defaults::unit_norm_atol: |‖e‖ − 1| ≤ atol exactly
// when (1 − atol)² ≤ ‖e‖² ≤ (1 + atol)², so the fused scans compare the squared norm they
// already have, with no square root.
struct UnitNormSqBounds {
    float lo;
    float hi;
};

inline UnitNormSqBounds unit_norm_sq_bounds() {
    const double atol = defaults::unit_norm_atol;
    return {static_cast<float>((1.0 - atol) * (1.0 - atol)), static_cast<float>((1.0 + atol) * (1.0 + atol))};
}

// Slow path, called only once a fused pass has seen a bad score or norm: find what is wrong.
// Order: a non-finite value, then a zero or overflowing norm, then a norm other than 1.
inline void explain_bad_row(const char* name, const MatrixRef& matrix, Index row, bool unit_rows = true) {
    for (Index j = 0; j < matrix.cols(); ++j) {
        const float value = matrix(row, j);
        if (!std::isfinite(value)) fail(name, " must be finite, got ", value, " at row ", row, ", column ", j);
    }
    const double norm_sq = matrix.row(row).cast<double>().squaredNorm();
    const float norm_sq32 = matrix.row(row).squaredNorm();
    if (!(norm_sq >= defaults::min_row_norm_sq) || !std::isfinite(norm_sq32))
        fail(name, " rows must have a non-zero, finite norm (L2-normalised rows expected); row ", row,
             " has squared norm ", norm_sq);
    if (!unit_rows) return;
    fail(name, " rows must have unit L2 norm (|norm - 1| <= ", defaults::unit_norm_atol,
         ": the operators rank by dot product, which is the cosine only for unit rows); row ", row, " has norm ",
         std::sqrt(norm_sq), ". Normalise the rows once: E / np.linalg.norm(E, axis=1, keepdims=True)");
}

// Every row finite with unit norm (for passes that read E without scoring it, e.g. quantize).
inline void check_unit_rows(const char* name, const MatrixRef& matrix) {
    const UnitNormSqBounds bounds = unit_norm_sq_bounds();
    for (Index i = 0; i < matrix.rows(); ++i) {
        const float norm_sq = matrix.row(i).squaredNorm();
        if (!(norm_sq >= bounds.lo && norm_sq <= bounds.hi)) explain_bad_row(name, matrix, i);
    }
}

}  // namespace fieldrank
