// CFS-R, Conditional Field Reconstruction (docs/spec.md §2): non-negative ridge reconstruction of the
// query from its candidates by projected gradient in Gram form, blended with cosine.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "hash.hpp"
#include "kernels.hpp"
#include "prefilter.hpp"
#include "simd.hpp"
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

// Largest eigenvalue of the (n_t × n_t) symmetric tridiagonal T = tridiag(beta, alpha, beta),
// known to lie in [lower, upper] and expected about `guess` above lower. Each evaluation runs
// the LDLᵀ recurrence of T - xI: when every pivot q_k is positive, x lies above all eigenvalues
// (Sturm), and g = p'(x)/p(x) gives the Newton step of p(x) = det(xI - T) from above, which
// never overshoots the largest root. The search first steps up from `lower` by a growing
// `guess` until it is above the root (Lanczos Ritz values creep up, so one step usually does),
// then takes Newton steps from above, bisecting whenever Newton would not halve the bracket.
// Returns the upper end of the final bracket (relative width 1e-14).
inline double tridiagonal_max_eigenvalue(const double* alpha, const double* beta, Index n_t, double lower,
                                         double upper, double guess) {
    double lo = std::min(lower, upper);
    double hi = upper;
    double g_hi = 0.0;  // not yet evaluated at hi
    double step_up = std::max(guess, 1e-14 * std::abs(lo));
    double x = std::min(lo + step_up, hi);
    bool bisected = false;
    for (int evaluation = 0; evaluation < 200; ++evaluation) {
        double q = x - alpha[0];
        bool above = q > 0.0;
        double g = 1.0 / q;
        double g_prev = 0.0;
        for (Index k = 1; k < n_t && above; ++k) {
            const double b2 = beta[k - 1] * beta[k - 1];
            const double q_next = (x - alpha[k]) - b2 / q;
            const double g_next = (1.0 + (x - alpha[k]) * g - b2 * g_prev / q) / q_next;
            g_prev = g;
            g = g_next;
            q = q_next;
            above = q > 0.0;
        }
        above = above && std::isfinite(g) && g > 0.0;
        const double bracket = hi - lo;
        double progress = 0.0;
        if (above) {
            progress = hi - x;
            hi = x;
            g_hi = g;
        } else if (x < hi) {
            lo = x;
        } else {
            break;  // the upper bound itself is (to rounding) the root
        }
        const double tolerance = 1e-14 * std::abs(hi);
        if (hi - lo <= tolerance) break;
        if (g_hi == 0.0) {  // still below the root: step up further
            step_up *= 4.0;
            x = std::min(lo + step_up, hi);
            continue;
        }
        const double newton = hi - 1.0 / g_hi;
        if (hi - newton <= tolerance) break;
        const double middle = 0.5 * (lo + hi);
        // Newton from above, unless it is crawling (far above a cluster of roots): then bisect once.
        const bool crawling = above && progress < 0.1 * bracket;
        if (newton <= lo || (crawling && !bisected)) {
            x = middle;
            bisected = true;
        } else {
            x = newton;
            bisected = false;
        }
    }
    return hi;
}

// |last component| of the unit eigenvector of T for its largest eigenvalue theta, by two steps
// of inverse iteration with a shift just above theta: T - σI is then negative definite, so the
// tridiagonal solve needs no pivoting.
inline double tridiagonal_last_component(const double* alpha, const double* beta, Index n_t, double theta,
                                         std::vector<double>& work) {
    if (n_t == 1) return 1.0;
    const double sigma = theta + 1e-12 * std::max(std::abs(theta), 1e-300);
    work.assign(static_cast<std::size_t>(3 * n_t), 0.0);
    double* y = work.data();
    double* c = y + n_t;
    double* m = c + n_t;
    for (Index i = 0; i < n_t; ++i) y[i] = 1.0;
    for (int pass = 0; pass < 2; ++pass) {
        m[0] = alpha[0] - sigma;
        c[0] = beta[0] / m[0];
        y[0] /= m[0];
        for (Index i = 1; i < n_t; ++i) {
            m[i] = (alpha[i] - sigma) - beta[i - 1] * c[i - 1];
            if (i + 1 < n_t) c[i] = beta[i] / m[i];
            y[i] = (y[i] - beta[i - 1] * y[i - 1]) / m[i];
        }
        for (Index i = n_t - 2; i >= 0; --i) y[i] -= c[i] * y[i + 1];
        double norm = 0.0;
        for (Index i = 0; i < n_t; ++i) norm += y[i] * y[i];
        norm = std::sqrt(norm);
        if (!(norm > 0.0) || !std::isfinite(norm)) return 1.0;  // cannot judge: report not converged
        for (Index i = 0; i < n_t; ++i) y[i] /= norm;
    }
    return std::abs(y[n_t - 1]);
}

// Which vector a Lanczos run starts from.
enum class LanczosStart { ones, hashed };

struct RitzMax {
    double theta = 0.0;     // the largest Ritz value
    bool invariant = false;  // the Krylov space closed before spanning R^n (breakdown)
};

// Largest Ritz value of the symmetric positive semi-definite G (n × n, zero-padded to ldg) by
// Lanczos with full reorthogonalisation in double, stopped when the Ritz residual bound
// |β_j s_j| falls under rel_tol·θ (the eigenvalue error is then far smaller). The Ritz value and
// the residual come from Newton's method and inverse iteration on the tridiagonal, O(j) per step.
inline RitzMax lanczos_ritz_max(const simd::KernelTable& kernels, const float* G, Index ldg, Index n, double rel_tol,
                                Index max_steps, LanczosStart start) {
    const Index steps = std::min<Index>(n, max_steps);
    // Scratch reused by the thread (see cfsr_gram_buffer); only the rows Lanczos reaches are written,
    // each over its full padded length, so stale values never leak in.
    static thread_local std::vector<double> reused;
    std::vector<double> local;
    std::vector<double>& basis = ldg <= 1024 ? reused : local;
    if (basis.size() < static_cast<std::size_t>(steps * ldg)) basis.resize(static_cast<std::size_t>(steps * ldg));
    std::fill(basis.begin(), basis.begin() + ldg, 0.0);
    std::vector<double> u(static_cast<std::size_t>(ldg), 0.0);
    std::vector<double> coefficients(static_cast<std::size_t>(steps));
    std::vector<double> alpha(static_cast<std::size_t>(steps)), beta(static_cast<std::size_t>(steps));
    std::vector<double> work;
    if (start == LanczosStart::ones) {
        for (Index i = 0; i < n; ++i) basis[static_cast<std::size_t>(i)] = 1.0 / std::sqrt(static_cast<double>(n));
    } else {
        // Entries uniform in [-1, 1) from a fixed hash: no structured pool is invariant under it.
        double norm_sq = 0.0;
        for (Index i = 0; i < n; ++i) {
            const double x = static_cast<double>(splitmix64(static_cast<std::uint64_t>(i)) >> 11) * 0x1p-52 - 1.0;
            basis[static_cast<std::size_t>(i)] = x;
            norm_sq += x * x;
        }
        for (Index i = 0; i < n; ++i) basis[static_cast<std::size_t>(i)] /= std::sqrt(norm_sq);
    }
    RitzMax out;
    double diagonal_max = 0.0;
    double increment = 0.0;  // growth of the largest Ritz value over the last step
    for (Index j = 0; j < steps; ++j) {
        const double* v = basis.data() + j * ldg;
        kernels.matvec_f64(G, ldg, n, v, u.data());
        const double a = kernels.dot_f64(v, u.data(), ldg);
        alpha[static_cast<std::size_t>(j)] = a;
        // Full reorthogonalisation against every basis vector, twice (classical Gram-Schmidt).
        for (int pass = 0; pass < 2; ++pass) {
            for (Index k = 0; k <= j; ++k)
                coefficients[static_cast<std::size_t>(k)] = kernels.dot_f64(basis.data() + k * ldg, u.data(), ldg);
            for (Index k = 0; k <= j; ++k)
                kernels.axpy_f64(-coefficients[static_cast<std::size_t>(k)], basis.data() + k * ldg, u.data(), ldg);
        }
        const double b = std::sqrt(kernels.dot_f64(u.data(), u.data(), ldg));
        beta[static_cast<std::size_t>(j)] = b;
        // The largest Ritz value lies above the last one and every diagonal entry, and grows by at
        // most β_(j-1) per step (Weyl).
        diagonal_max = j == 0 ? a : std::max(diagonal_max, a);
        if (j == 0) {
            out.theta = a;
        } else {
            const double lower = std::max(out.theta, diagonal_max);
            const double upper = (std::max(out.theta, a) + beta[static_cast<std::size_t>(j - 1)]) * (1.0 + 1e-12);
            const double previous = out.theta;
            out.theta = tridiagonal_max_eigenvalue(alpha.data(), beta.data(), j + 1, lower, upper, increment);
            increment = out.theta - previous;
        }
        const double scale = std::abs(out.theta);
        if (j + 1 == steps) break;
        if (b <= rel_tol * scale || b == 0.0) {
            out.invariant = j + 1 < n;
            break;
        }
        const double residual = b * tridiagonal_last_component(alpha.data(), beta.data(), j + 1, out.theta, work);
        if (residual <= rel_tol * scale) break;
        double* next = basis.data() + (j + 1) * ldg;
        for (Index i = 0; i < ldg; ++i) next[i] = u[static_cast<std::size_t>(i)] / b;
    }
    return out;
}

// λ_max of G. Lanczos starts from the ones vector (real pools converge in ~5 steps, random ones
// in ~10). A breakdown means the start vector's Krylov space is invariant: its Ritz values are
// exact but can miss the top eigenvalue (the pool {c, -c} has G·1 = 0, Ritz value 0, while
// λ_max = 2), which would make the step 1/(λ_max + λ) far too long. Rare: then a second run
// starts from a hashed vector, which has a component along every eigenvector, and the larger
// answer counts. (A dense eigen-solve is no fallback: Eigen's fails to converge on some
// degenerate pools, e.g. 218 rows alternating between two orthogonal vectors.)
inline double lambda_max(const simd::KernelTable& kernels, const float* G, Index ldg, Index n, double rel_tol,
                         Index max_steps) {
    const RitzMax first = lanczos_ritz_max(kernels, G, ldg, n, rel_tol, max_steps, LanczosStart::ones);
    if (!first.invariant) return first.theta;
    const RitzMax second = lanczos_ritz_max(kernels, G, ldg, n, rel_tol, max_steps, LanczosStart::hashed);
    return std::max(first.theta, second.theta);
}

// The reconstruction on a pool: returns the top k of the pool by the blended score and the
// raw coefficient a of each returned candidate. G lives in an (ldg × ldg) zero-padded buffer,
// ldg a multiple of 16, so every element-wise kernel runs over whole vectors.
// The Gram matrix of a batch's shared candidate set (a subset of E): each query's pool Gram is
// then a gather instead of P(P+1)/2 dot products. Entries are the dot products kernels.gram
// computes for the pool itself (same per-pair arithmetic, and x·y = y·x exactly), so a pool's G
// is bit-identical either way.
struct SharedGram {
    std::vector<Index> ids;        // candidate ids, sorted
    std::vector<Index> positions;  // positions[i]: row of ids[i] in G
    std::vector<float> G;          // n × n
    Index n = 0;

    Index position_of(Index id) const {
        const auto it = std::lower_bound(ids.begin(), ids.end(), id);
        return positions[static_cast<std::size_t>(it - ids.begin())];
    }
};

// Worth it when the batch's pools together would compute more dot products than the set has pairs.
inline bool shared_gram_pays(const OptionalIds& subset, Index batch, Index p) {
    if (!subset) return false;
    const Index n = subset->size();
    const Index pool = std::min(p, n);
    return n <= defaults::cfsr_shared_gram_max_rows && batch * pool * pool >= n * n;
}

inline SharedGram shared_gram(const MatrixRef& E, const IdRef& subset) {
    const simd::KernelTable& kernels = simd::kernels();
    SharedGram out;
    out.n = subset.size();
    out.G.assign(static_cast<std::size_t>(out.n * out.n), 0.0f);
    kernels.gram(E.data(), E.outerStride(), subset.data(), out.n, E.cols(), out.G.data(), out.n);
    std::vector<Index> order(static_cast<std::size_t>(out.n));
    for (Index i = 0; i < out.n; ++i) order[static_cast<std::size_t>(i)] = i;
    std::sort(order.begin(), order.end(), [&](Index a, Index b) { return subset[a] < subset[b]; });
    out.ids.resize(order.size());
    out.positions = order;
    for (std::size_t i = 0; i < order.size(); ++i) out.ids[i] = subset[order[i]];
    return out;
}

// Per-thread scratch for cfsr_on_pool, reused across the queries a thread solves so that a batch
// does not allocate (and page-fault) a Gram matrix per query. Pools above the cap allocate.
struct CfsrScratch {
    std::vector<float> G;
};

inline std::vector<float>& cfsr_gram_buffer(Index ldg, std::vector<float>& local) {
    constexpr Index kMaxReused = 1024;  // ldg above this (4 MiB): a buffer per call
    static thread_local CfsrScratch scratch;
    std::vector<float>& G = ldg <= kMaxReused ? scratch.G : local;
    G.assign(static_cast<std::size_t>(ldg * ldg), 0.0f);
    return G;
}

// e with |x| in [2^(e-1), 2^e), or 0 for x = 0: dividing by 2^e brings x to about 1.
inline int binary_exponent(double x) {
    int exponent = 0;
    if (x != 0.0 && std::isfinite(x)) std::frexp(x, &exponent);
    return exponent;
}

// A coefficient solved at scale 2^-exponent, in the caller's units. It can exceed float32 only
// for rows and a query of wildly different norms, and then no float32 answer is right.
inline float unscaled_coefficient(float scaled, int exponent) {
    const double value = std::ldexp(static_cast<double>(scaled), exponent);
    if (value > static_cast<double>(std::numeric_limits<float>::max()))
        fail("cfsr: a reconstruction coefficient is past the float32 range (rows and query of very different "
             "norms); L2-normalise E and q");
    return static_cast<float>(value);
}

inline Reconstruction cfsr_on_pool(const Pool& pool, Index k, const CfsrParams& params,
                                   const SharedGram* shared = nullptr) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index n = pool.ids.size();
    const Index d = pool.dim();
    const Index ldg = detail::pad16(n);
    std::vector<float> local;
    std::vector<float>& G = cfsr_gram_buffer(ldg, local);
    if (shared != nullptr) {
        std::vector<Index> at(static_cast<std::size_t>(n));
        for (Index i = 0; i < n; ++i) at[static_cast<std::size_t>(i)] = shared->position_of(pool.ids[i]);
        for (Index i = 0; i < n; ++i) {
            const float* source = shared->G.data() + at[static_cast<std::size_t>(i)] * shared->n;
            float* target = G.data() + i * ldg;
            for (Index j = 0; j < n; ++j) target[j] = source[at[static_cast<std::size_t>(j)]];
        }
    } else {
        kernels.gram(pool.rows(), pool.stride(), pool.row_ids(), n, d, G.data(), ldg);
    }
    const double top = lambda_max(kernels, G.data(), ldg, n, defaults::lambda_max_rel_tol, defaults::lambda_max_max_steps);
    // The iteration runs on (G·2^-g, λ·2^-g, r·2^-e) with 2^e ≈ max|r| and 2^g ≈ λ_max + λ (g = 0
    // while λ_max + λ is within 2^±cfsr_gram_rescale_min_exponent): scaling by a power of two is
    // exact, so every iterate is the unscaled one times 2^(g-e), bit for bit, while no accepted
    // norm (rows 1e-12..1e19, any caller sims) can overflow or underflow float32 on the way. The
    // raw coefficients are scaled back in double at the end.
    const double curvature = top + params.lam;
    const int curvature_exponent = binary_exponent(curvature);
    const int g_exponent =
        std::abs(curvature_exponent) > defaults::cfsr_gram_rescale_min_exponent ? curvature_exponent : 0;
    const int r_exponent = binary_exponent(static_cast<double>(pool.sims.cwiseAbs().maxCoeff()));
    // The factors are applied in double: 2^-e itself can lie outside float32 (r of 1e-42 needs 2^139).
    if (g_exponent != 0) {
        const double g_scale = std::ldexp(1.0, -g_exponent);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < n; ++j) {
                float& entry = G[static_cast<std::size_t>(i * ldg + j)];
                entry = static_cast<float>(entry * g_scale);
            }
    }
    const float lam = static_cast<float>(std::ldexp(params.lam, -g_exponent));
    const float step = static_cast<float>(1.0 / std::ldexp(curvature, -g_exponent));
    const double tol = std::ldexp(params.tol, -r_exponent);

    VectorXf r = VectorXf::Zero(ldg);
    r.head(n) = (pool.sims.cast<double>() * std::ldexp(1.0, -r_exponent)).cast<float>();
    VectorXf a = VectorXf::Zero(ldg);
    VectorXf next = VectorXf::Zero(ldg);
    VectorXf gradient = VectorXf::Zero(ldg);
    VectorXf previous = a;   // FISTA: the last iterate
    VectorXf momentum = a;   // FISTA: the extrapolated point
    std::vector<Index> scratch(static_cast<std::size_t>(ldg));
    double t_current = 1.0;
    for (Index t = 0; t < params.iters; ++t) {
        const VectorXf& point = params.fista ? momentum : a;
        kernels.pg_step(G.data(), ldg, n, point.data(), r.data(), lam, step, gradient.data(), next.data(),
                        scratch.data());
        if (tol > 0.0) {
            // Norm of the projected gradient: the optimality gap of the bound-constrained problem.
            double pg_norm_sq = 0.0;
            for (Index i = 0; i < n; ++i) {
                const double g = point[i] > 0.0f ? gradient[i] : std::min(gradient[i], 0.0f);
                pg_norm_sq += g * g;
            }
            if (std::sqrt(pg_norm_sq) <= tol) break;
        }
        if (params.fista) {
            previous.swap(a);
            a.swap(next);
            const double t_next = (1.0 + std::sqrt(1.0 + 4.0 * t_current * t_current)) / 2.0;
            momentum = a + static_cast<float>((t_current - 1.0) / t_next) * (a - previous);
            t_current = t_next;
        } else {
            a.swap(next);
        }
    }

    const VectorXf a_pool = a.head(n);
    const VectorXf r_pool = r.head(n);
    const float a_max = a_pool.maxCoeff();
    const VectorXf a_norm = a_max > 0.0f ? VectorXf(a_pool / a_max) : VectorXf(VectorXf::Zero(n));
    const float r_min = r_pool.minCoeff();
    const float r_span = r_pool.maxCoeff() - r_min;
    const VectorXf r_norm =
        r_span > 0.0f ? VectorXf((r_pool.array() - r_min) / r_span) : VectorXf(VectorXf::Ones(n));
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
        out.coef[i] = unscaled_coefficient(a_pool[order[i]], r_exponent - g_exponent);
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
    const Index width = checked_pool_batch_width(E, Q, k, p, subset, [&] { check_cfsr_params(k, params); });
    BatchReconstruction out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    out.coef.setZero(Q.rows(), width);
    if (Q.rows() == 0) return out;
    // One scan of E for the whole batch, then every pool in parallel (see run_ranking_batch).
    // Many queries over one small subset (a conversation, a tenant) share its Gram matrix.
    auto tops = scan_topk(E, Q.data(), Q.outerStride(), Q.rows(), subset, p, n_threads);
    std::optional<SharedGram> shared;
    if (shared_gram_pays(subset, Q.rows(), p)) shared = shared_gram(E, *subset);
    parallel_for(0, Q.rows(), n_threads, [&](Index b) {
        const Reconstruction r =
            cfsr_on_pool(gather_pool(E, std::move(tops[static_cast<std::size_t>(b)]), false), k, params,
                         shared ? &*shared : nullptr);
        out.ids.row(b) = r.ids.transpose();
        out.scores.row(b) = r.scores.transpose();
        out.coef.row(b) = r.coef.transpose();
    });
    return out;
}

}  // namespace fieldrank
