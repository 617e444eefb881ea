// CFS-R, Conditional Field Reconstruction (SPEC §2): non-negative ridge reconstruction of the
// query from its candidates by projected gradient in Gram form, blended with cosine.
#pragma once

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "prefilter.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

struct CfsrParams {
    double w = defaults::cfsr_w;
    double lam = defaults::cfsr_lam;
    Index iters = defaults::cfsr_iters;
    double tol = defaults::cfsr_tol;
    bool fista = false;
};

inline void check_cfsr_params(Index k, const CfsrParams& params) {
    require_positive("k", k);
    require_unit_interval("w", params.w);
    require_non_negative_real("lam", params.lam);
    require_positive("iters", params.iters);
    require_non_negative_real("tol", params.tol);
}

// G = C Cᵀ, computed once on the lower triangle and mirrored (the Gram matrix is symmetric).
// The fixed-order dot kernel (kernels.hpp) makes identical pool rows give bit-identical rows and
// columns of G wherever they sit; Eigen's blocked product sums by position, and duplicate
// candidates then got coefficients a few ulps apart, ordered by noise instead of the tie rule.
inline RowMatrixXf gram(const RowMatrixXf& C) {
    const Index n = C.rows();
    const Index d = C.cols();
    RowMatrixXf G(n, n);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) G(i, j) = G(j, i) = kernels::dot(C.row(i).data(), C.row(j).data(), d);
    return G;
}

// Largest eigenvalue of the symmetric positive semi-definite G by Lanczos with full
// reorthogonalisation, stopped when the Ritz residual bound falls under rel_tol·θ. Converges in
// far fewer products than power iteration when the top eigenvalues are close.
inline double lambda_max(const RowMatrixXf& G, double rel_tol, Index max_steps) {
    const Index n = G.rows();
    const Index steps = std::min<Index>(n, max_steps);
    const RowMatrixXd Gd = G.cast<double>();
    RowMatrixXd basis(steps, n);
    VectorXd alpha(steps), beta(steps);
    VectorXd v = VectorXd::Ones(n) / std::sqrt(static_cast<double>(n));
    double theta = Gd.diagonal().maxCoeff();
    for (Index j = 0; j < steps; ++j) {
        basis.row(j) = v.transpose();
        VectorXd u = Gd * v;
        alpha[j] = v.dot(u);
        // Full reorthogonalisation against every earlier basis vector, twice for stability.
        for (int pass = 0; pass < 2; ++pass) {
            const VectorXd coeffs = basis.topRows(j + 1) * u;
            u.noalias() -= basis.topRows(j + 1).transpose() * coeffs;
        }
        beta[j] = u.norm();
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> tri;
        Eigen::MatrixXd T = Eigen::MatrixXd::Zero(j + 1, j + 1);
        for (Index i = 0; i <= j; ++i) {
            T(i, i) = alpha[i];
            if (i > 0) T(i, i - 1) = T(i - 1, i) = beta[i - 1];
        }
        tri.compute(T);
        theta = tri.eigenvalues()[j];
        if (j + 1 < n && beta[j] <= rel_tol * std::abs(theta)) {
            // Breakdown: the Krylov space of the start vector is invariant and can miss the top
            // eigenvalue (the pool {c, −c} has G·1 = 0 and Ritz value 0 while λ_max = 2), which would
            // make the step 1/(λ_max + λ) far too long. Decide exactly; this path is rare.
            Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> exact(Gd, Eigen::EigenvaluesOnly);
            return exact.eigenvalues()[n - 1];
        }
        const double residual = std::abs(beta[j] * tri.eigenvectors()(j, j));
        if (residual <= rel_tol * std::abs(theta) || j + 1 == steps) break;
        v = u / beta[j];
    }
    return theta;
}

// The reconstruction on a pool: returns the top k of the pool by the blended score and the
// raw coefficient a of each returned candidate.
inline Reconstruction cfsr_on_pool(const Pool& pool, Index k, const CfsrParams& params) {
    const Index n = pool.ids.size();
    const RowMatrixXf G = gram(pool.vectors);
    const float lam = static_cast<float>(params.lam);
    const float step = static_cast<float>(
        1.0 / (lambda_max(G, defaults::lambda_max_rel_tol, defaults::lambda_max_max_steps) + params.lam));
    const VectorXf& r = pool.sims;

    VectorXf a = VectorXf::Zero(n);
    VectorXf gradient(n);
    VectorXf previous = a;   // FISTA: the last iterate
    VectorXf momentum = a;   // FISTA: the extrapolated point
    double t_current = 1.0;
    for (Index t = 0; t < params.iters; ++t) {
        const VectorXf& point = params.fista ? momentum : a;
        // Row by row with the fixed-order kernel, so identical rows of G give identical gradients.
        kernels::dot_rows(G.data(), n, n, point.data(), gradient.data());
        gradient += lam * point - r;
        if (params.tol > 0.0) {
            // Norm of the projected gradient: the optimality gap of the bound-constrained problem.
            const float pg_norm_sq = (point.array() > 0.0f)
                                         .select(gradient.array(), gradient.array().min(0.0f))
                                         .matrix()
                                         .squaredNorm();
            if (std::sqrt(static_cast<double>(pg_norm_sq)) <= params.tol) break;
        }
        if (params.fista) {
            previous = a;
            a = (point - step * gradient).cwiseMax(0.0f);
            const double t_next = (1.0 + std::sqrt(1.0 + 4.0 * t_current * t_current)) / 2.0;
            momentum = a + static_cast<float>((t_current - 1.0) / t_next) * (a - previous);
            t_current = t_next;
        } else {
            a = (a - step * gradient).cwiseMax(0.0f);
        }
    }

    const float a_max = a.maxCoeff();
    const VectorXf a_norm = a_max > 0.0f ? VectorXf(a / a_max) : VectorXf(VectorXf::Zero(n));
    const float r_min = r.minCoeff();
    const float r_span = r.maxCoeff() - r_min;
    const VectorXf r_norm = r_span > 0.0f ? VectorXf((r.array() - r_min) / r_span) : VectorXf(VectorXf::Ones(n));
    const float w = static_cast<float>(params.w);
    const VectorXf score = w * a_norm + (1.0f - w) * r_norm;

    const std::vector<Index> order = rank_positions(score, pool.ids, k);
    Reconstruction out;
    const Index m = static_cast<Index>(order.size());
    out.ids.resize(m);
    out.scores.resize(m);
    out.coef.resize(m);
    for (Index i = 0; i < m; ++i) {
        out.ids[i] = pool.ids[order[i]];
        out.scores[i] = score[order[i]];
        out.coef[i] = a[order[i]];
    }
    return out;
}

inline Reconstruction cfsr(const MatrixRef& E, const VectorRef& q, Index k, Index p, const CfsrParams& params,
                           const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    require_positive("p", p);
    check_cfsr_params(k, params);
    return cfsr_on_pool(pool_from_corpus(E, q, p, subset), k, params);
}

inline Reconstruction cfsr_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k,
                                const CfsrParams& params, const OptionalVector& sims = std::nullopt) {
    check_cfsr_params(k, params);
    return cfsr_on_pool(pool_from_caller(ids, C, q, sims), k, params);
}

inline BatchReconstruction cfsr_batch(const MatrixRef& E, const MatrixRef& Q, Index k, Index p,
                                      const CfsrParams& params, const OptionalIds& subset, Index n_threads) {
    check_batch(E, Q, subset);
    require_positive("p", p);
    check_cfsr_params(k, params);
    const Index width = std::min<Index>(k, std::min<Index>(p, candidate_count(E, subset)));
    BatchReconstruction out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    out.coef.setZero(Q.rows(), width);
    parallel_for(0, Q.rows(), n_threads, [&](Index b) {
        const Reconstruction r = cfsr_on_pool(pool_from_corpus(E, VectorRef(Q.row(b).transpose()), p, subset), k, params);
        out.ids.row(b) = r.ids.transpose();
        out.scores.row(b) = r.scores.transpose();
        out.coef.row(b) = r.coef.transpose();
    });
    return out;
}

}  // namespace fieldrank
