// Row-major Eigen aliases shared by every kernel and by the bindings. Row-major so that a
// C-ordered numpy (N, d) array maps onto RowMatrixXf without a copy.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>

namespace fieldrank {

using Index = std::int64_t;
using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXi = Eigen::Matrix<Index, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VectorXf = Eigen::VectorXf;
using VectorXd = Eigen::VectorXd;
using IdVector = Eigen::Matrix<Index, Eigen::Dynamic, 1>;
using BoolVector = Eigen::Matrix<bool, Eigen::Dynamic, 1>;
using Int8Vector = Eigen::Matrix<std::int8_t, Eigen::Dynamic, 1>;

// Read-only views of caller memory: (N, d) corpus, (d,) query, (P,) ids.
using MatrixRef = Eigen::Ref<const RowMatrixXf>;
using VectorRef = Eigen::Ref<const VectorXf>;
using IdRef = Eigen::Ref<const IdVector>;
using OptionalIds = std::optional<IdRef>;
using OptionalVector = std::optional<VectorRef>;

// One ranked list: ids best first and the scores that ordered them.
struct Ranking {
    IdVector ids;
    VectorXf scores;
};

// CFS-R's ranked list plus the non-negative coefficient of each returned id.
struct Reconstruction {
    IdVector ids;
    VectorXf scores;
    VectorXf coef;
};

// A batch of rankings of equal length, one row per query.
struct BatchRanking {
    RowMatrixXi ids;
    RowMatrixXf scores;
};

struct BatchReconstruction {
    RowMatrixXi ids;
    RowMatrixXf scores;
    RowMatrixXf coef;
};

// RRF scores are sums of small reciprocals; they stay in double so that ties are exact.
struct FusedRanking {
    IdVector ids;
    VectorXd scores;
};

}  // namespace fieldrank
