// Argument checks shared by the kernels. Every message names the argument, what was
// expected and what was given; std::invalid_argument becomes ValueError in Python.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

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

// Slow path, called only once a fused pass has seen a bad score or norm: find what is wrong.
inline void explain_bad_row(const char* name, const MatrixRef& matrix, Index row) {
    for (Index j = 0; j < matrix.cols(); ++j) {
        const float value = matrix(row, j);
        if (!std::isfinite(value)) fail(name, " must be finite, got ", value, " at row ", row, ", column ", j);
    }
    fail(name, " rows must have a non-zero, finite norm (L2-normalised rows expected); row ", row,
         " has squared norm ", matrix.row(row).cast<double>().squaredNorm());
}

inline void check_rows_finite_nonzero(const char* name, const MatrixRef& matrix, double min_norm_sq) {
    for (Index i = 0; i < matrix.rows(); ++i) {
        const float norm_sq = matrix.row(i).squaredNorm();
        if (!std::isfinite(norm_sq) || norm_sq < min_norm_sq) explain_bad_row(name, matrix, i);
    }
}

}  // namespace fieldrank
