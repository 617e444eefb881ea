// The time-aware leg (python/fieldrank/temporal.py gives the formula): over the rows a query may
// see, z-normalised lexical scores blended with z-normalised cosines, the same-session neighbour
// support, the time-cue and session-date priors, and the top-k under the tie rule.
//
// Arithmetic is float64 throughout, like the numpy reference it is held to: the cosines are
// float32 rows times float32 queries summed in double (each product is exact there), the means
// and standard deviations use numpy's pairwise summation, and every later step is the same
// sequence of double operations as the reference. Each row of E is read once per block of
// queries; a query's scores do not depend on the block, the thread split or the batch, so a
// batch equals its queries one by one for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

struct TemporalParams {
    double alpha = defaults::temporal_alpha;    // lexical share of the base blend, in [0, 1]
    double gamma = defaults::temporal_gamma;    // weight of the neighbour support, >= 0
    Index radius = defaults::temporal_radius;   // neighbours i ± 1 … i ± radius of the same session, >= 1
    double decay = defaults::temporal_decay;    // factor per extra step of distance, in [0, 1]
    double tau = defaults::temporal_tau;        // time-cue boost for queries with time intent, >= 0
    double delta = defaults::temporal_delta;    // boost for rows whose session day is in a named period, >= 0
    Index before_days = defaults::temporal_before_days;  // slack before / after a named period, >= 0
    Index after_days = defaults::temporal_after_days;
};

// What the leg knows about each of the N corpus rows (all pointers to N entries).
struct TemporalTimeline {
    const Index* session = nullptr;    // required: rows i and i ± d are neighbours only with equal keys
    const std::uint8_t* cue = nullptr;  // optional: the row's text anchors something in time (0/1)
    const Index* day = nullptr;        // optional: session day number; INT64_MIN (NaT) is in no period
};

// What each of the B queries asks: time intent and the periods it names (inclusive day pairs).
struct TemporalQueries {
    const std::uint8_t* intent = nullptr;  // optional, B entries (0/1)
    const Index* window_offsets = nullptr;  // optional, B + 1 entries into window_days
    const Index* window_days = nullptr;     // (start, end) pairs, 2 · window_offsets[B] entries
};

// Lexical scores of every corpus row for each query: row b at data + b · ld (N entries read at
// the leg's rows). Null when alpha == 0.
template <typename Lex>
struct LexicalScores {
    static_assert(std::is_same_v<Lex, float> || std::is_same_v<Lex, double>, "lexical scores are float32 or float64");
    const Lex* data = nullptr;
    Index ld = 0;
};

struct TemporalRanking {
    RowMatrixXi ids;
    RowMatrixXd scores;
};

namespace detail {

// numpy's pairwise summation (umath loops, PW_BLOCKSIZE 128) of value(begin) … value(begin + n - 1):
// the same additions in the same order, so a mean or variance of the same doubles is bit-identical
// to numpy's. value(i) is computed on the fly (no array of the terms is written).
template <typename Value>
inline double pairwise_sum_of(const Value& value, Index begin, Index n) {
    if (n < 8) {
        double sum = 0.0;
        for (Index i = 0; i < n; ++i) sum += value(begin + i);
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int l = 0; l < 8; ++l) r[l] = value(begin + l);
        Index i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int l = 0; l < 8; ++l) r[l] += value(begin + i + l);
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) sum += value(begin + i);
        return sum;
    }
    Index half = n / 2;
    half -= half % 8;
    return pairwise_sum_of(value, begin, half) + pairwise_sum_of(value, begin + half, n - half);
}

inline double pairwise_sum(const double* x, Index n) {
    return pairwise_sum_of([x](Index i) { return x[i]; }, 0, n);
}

// numpy's mean and population std of value(0) … value(n - 1) (sd 1 where it is 0): the z-score of
// x is (x - mean) / sd.
struct Moments {
    double mean;
    double sd;
};

template <typename Value>
inline Moments moments_of(const Value& value, Index n) {
    const double count = static_cast<double>(n);
    const double mean = pairwise_sum_of(value, 0, n) / count;
    const auto centred_sq = [&value, mean](Index i) {
        const double centred = value(i) - mean;
        return centred * centred;
    };
    double sd = std::sqrt(pairwise_sum_of(centred_sq, 0, n) / count);
    if (sd == 0.0) sd = 1.0;
    return {mean, sd};
}

// Per-thread scratch of at least n doubles, reused across queries and calls (not zeroed): a query
// allocates nothing of size n.
inline double* thread_scratch(Index n) {
    thread_local std::vector<double> scratch;
    if (scratch.size() < static_cast<std::size_t>(n)) scratch.resize(static_cast<std::size_t>(n));
    return scratch.data();
}

inline Index row_at(const Index* rows, Index i) { return rows != nullptr ? rows[i] : i; }

// Checks the leg's arguments that the Python layer does not (sizes, order of the rows, windows).
inline void check_temporal_call(const MatrixRef& E, const MatrixRef& Q, const Index* rows, Index n,
                                const TemporalQueries& queries, Index n_windows, const TemporalParams& p, Index k) {
    require_rows("E", E);
    if (Q.cols() != E.cols()) fail("Q must have ", E.cols(), " columns to match E.shape[1], got ", Q.cols());
    require_positive("k", k);
    require_positive("radius", p.radius);
    require_unit_interval("alpha", p.alpha);
    require_unit_interval("decay", p.decay);
    require_non_negative_real("gamma", p.gamma);
    require_non_negative_real("tau", p.tau);
    require_non_negative_real("delta", p.delta);
    if (p.before_days < 0 || p.after_days < 0) fail("before_days and after_days must be >= 0");
    if (n <= 0) fail("rows must hold at least one row");
    if (rows != nullptr) {
        for (Index i = 0; i < n; ++i) {
            if (rows[i] < 0 || rows[i] >= E.rows()) fail("rows must lie in [0, ", E.rows(), "), got ", rows[i]);
            if (i > 0 && rows[i] <= rows[i - 1]) fail("rows must be sorted and unique, got ", rows[i], " after ", rows[i - 1]);
        }
    }
    if (queries.window_offsets != nullptr) {
        if (queries.window_offsets[0] != 0) fail("window_offsets must start at 0");
        for (Index b = 0; b < Q.rows(); ++b)
            if (queries.window_offsets[b + 1] < queries.window_offsets[b])
                fail("window_offsets must be non-decreasing");
        if (queries.window_offsets[Q.rows()] != n_windows)
            fail("window_offsets must end at the number of windows (", n_windows, "), got ",
                 queries.window_offsets[Q.rows()]);
    }
}

// Cosines (double) of queries [q0, q0 + nq) with the leg's rows into dense (nq × n), split into row
// chunks across threads. With norms, the rows' squared norms are checked from the same read; the
// first bad row (lowest position, whatever the split) is reported.
inline void temporal_dense(const MatrixRef& E, const RowMatrixXd& Qd, Index q0, Index nq, const Index* rows, Index n,
                           bool check_rows, Index n_threads, double* dense) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index chunk = defaults::scan_block_rows;
    const Index chunks = (n + chunk - 1) / chunk;
    std::vector<double> norms(check_rows ? static_cast<std::size_t>(n) : 0);
    const float* base = E.data();
    // Per chunk of rows (kept in L2), the queries go in small groups whose float64 copies stay in
    // L1; E itself is read from memory once per block of queries.
    const Index group = defaults::temporal_query_group;
    parallel_for(0, chunks, n_threads, [&](Index c) {
        const Index begin = c * chunk;
        const Index count = std::min(chunk, n - begin);
        const Index* ids = rows != nullptr ? rows + begin : nullptr;
        const float* first = rows != nullptr ? base : base + begin * E.outerStride();
        Index g0 = 0;
        do {  // nq = 0 still makes one call, for the norms
            const Index gq = std::min(group, nq - g0);
            kernels.score_f32_f64(first, E.outerStride(), ids, count, E.cols(), Qd.data() + (q0 + g0) * Qd.cols(),
                                  Qd.cols(), gq, gq > 0 ? dense + g0 * n + begin : nullptr, n,
                                  check_rows && g0 == 0 ? norms.data() + begin : nullptr);
            g0 += group;
        } while (g0 < nq);
    });
    if (!check_rows) return;
    // The operators' rule for corpus rows (finite, unit norm within unit_norm_atol), on the squared
    // norms the cosine pass has already summed.
    const UnitNormSqBounds bounds = unit_norm_sq_bounds();
    for (Index i = 0; i < n; ++i) {
        const double norm_sq = norms[static_cast<std::size_t>(i)];
        if (!(norm_sq >= bounds.lo && norm_sq <= bounds.hi)) explain_bad_row("E", E, row_at(rows, i));
    }
}

// One query's leg scores over the n rows, from its cosines (null when alpha == 1) and lexical
// scores (null when alpha == 0), into score (n doubles); base holds n doubles of scratch (and
// support n more when the rows are a subset). The operations per row are the reference's, in
// its order (the build has no FMA contraction), fused into few sweeps: two reductions per
// z-score read the inputs in place, one sweep writes the base blend, one the final score.
template <typename Lex>
void temporal_query_scores(const double* dense, const Lex* lexical, const Index* rows, Index n,
                           const TemporalTimeline& timeline, bool intent, const Index* windows, Index n_windows,
                           const TemporalParams& p, double* base, double* support, double* score) {
    // Base blend: (1 − α)·z(cos) + α·z(lex), each z over the rows (reference: temporal_scores).
    Moments dense_z{0.0, 1.0};
    if (p.alpha < 1.0) dense_z = moments_of([dense](Index i) { return dense[i]; }, n);
    Moments lex_z{0.0, 1.0};
    const auto lex_at = [lexical, rows](Index i) { return static_cast<double>(lexical[row_at(rows, i)]); };
    if (p.alpha > 0.0) {
        lex_z = moments_of(lex_at, n);
        // A non-finite score makes the sum non-finite (float32 values cannot overflow a double sum).
        if (!std::isfinite(lex_z.mean)) fail("lexical must be finite");
    }
    // The element-wise sweeps run in the kernel table (vectorised per instruction set, same bits).
    const simd::KernelTable& kernels = simd::kernels();
    const Lex* lex = p.alpha > 0.0 ? lexical : nullptr;
    const float* lex32 = nullptr;
    const double* lex64 = nullptr;
    if constexpr (std::is_same_v<Lex, float>) lex32 = lex;
    else lex64 = lex;
    kernels.temporal_blend(p.alpha < 1.0 ? dense : nullptr, lex32, lex64, rows, n, 1.0 - p.alpha, dense_z.mean,
                           dense_z.sd, p.alpha, lex_z.mean, lex_z.sd, base);
    // Support: max over same-session neighbours rows[i] ± dist (inside the rows) of
    // decay^(dist-1) · max(base, 0); distances from the first with factor 0 on lend nothing.
    thread_local std::vector<double> factors;
    factors.clear();
    if (p.gamma > 0.0) {
        for (Index dist = 1; dist <= p.radius; ++dist) {
            const double factor = std::pow(p.decay, static_cast<double>(dist - 1));
            if (factor == 0.0) break;
            factors.push_back(factor);
        }
    }
    const Index radius = static_cast<Index>(factors.size());
    const Index* session = timeline.session;
    if (p.gamma > 0.0 && rows == nullptr) {
        // All rows: the neighbour of row i at offset ±dist is position i ± dist.
        kernels.temporal_support(base, session, n, factors.data(), radius, p.gamma, score);
    } else if (p.gamma > 0.0) {
        std::fill(support, support + n, 0.0);
        for (Index k = 0; k < radius; ++k) {
            const Index dist = k + 1;
            const double factor = factors[k];
            for (Index i = 0; i < n; ++i) {
                // Only the pair (i, j > i) is searched; it lends support both ways.
                const Index row = row_at(rows, i);
                const Index target = row + dist;
                for (Index j = i + 1; j <= i + dist && j < n && row_at(rows, j) <= target; ++j) {
                    if (row_at(rows, j) != target) continue;
                    if (session[target] == session[row]) {
                        support[i] = std::max(support[i], factor * std::max(base[j], 0.0));
                        support[j] = std::max(support[j], factor * std::max(base[i], 0.0));
                    }
                    break;
                }
            }
        }
        for (Index i = 0; i < n; ++i) score[i] = base[i] + p.gamma * support[i];
    } else {
        std::copy(base, base + n, score);
    }
    if (p.tau > 0.0 && intent && timeline.cue != nullptr) {
        for (Index i = 0; i < n; ++i)
            if (timeline.cue[row_at(rows, i)] != 0) score[i] = score[i] + p.tau;
    }
    if (p.delta > 0.0 && n_windows > 0 && timeline.day != nullptr) {
        for (Index i = 0; i < n; ++i) {
            const Index day = timeline.day[row_at(rows, i)];
            if (day == std::numeric_limits<Index>::min()) continue;  // NaT: in no period
            bool hit = false;
            for (Index w = 0; w < n_windows && !hit; ++w)
                hit = day >= windows[2 * w] - p.before_days && day <= windows[2 * w + 1] + p.after_days;
            if (hit) score[i] = score[i] + p.delta;
        }
    }
}

}  // namespace detail

// The leg for B queries (rows of Q) over the rows `rows` (sorted unique corpus rows; null: all N
// rows, n = N). Returns (B, min(k, n)) ids and float64 scores, higher first, ties to the lower
// row. check_rows checks every row read (finite, non-zero norm) in the cosine pass itself; callers
// that validated the corpus once (a retriever, a store) pass false. row_order: instead of the
// top-k, every row's score in the order of `rows` ((B, n) scores, ids left empty), for a caller
// that needs the scores of chosen rows and only a short top (the memory store): it selects in
// O(n) instead of paying a full sort when k would be n.
template <typename Lex>
TemporalRanking temporal_batch(const MatrixRef& E, const MatrixRef& Q, LexicalScores<Lex> lexical, const Index* rows,
                               Index n, const TemporalTimeline& timeline, const TemporalQueries& queries,
                               Index n_windows, const TemporalParams& p, Index k, bool check_rows, Index n_threads,
                               bool row_order = false) {
    detail::check_temporal_call(E, Q, rows, n, queries, n_windows, p, k);
    if (timeline.session == nullptr) fail("the timeline needs session keys");
    if (p.alpha > 0.0 && lexical.data == nullptr) fail("lexical scores are required when alpha > 0");
    if (!check_rows && rows != nullptr && rows[n - 1] - rows[0] == n - 1 && rows[0] > 0) {
        // Sorted unique rows spanning a contiguous range (one conversation, a tenant's block) are the
        // all-rows case over views shifted to their first row: reads need no indirection and the
        // neighbour support no search. Same rows, same arithmetic, ids shifted back.
        const Index first = rows[0];
        const MatrixRef block(E.middleRows(first, n));
        if (block.data() != E.data() + first * E.outerStride()) fail("internal: the row block was copied");
        const LexicalScores<Lex> shifted_lexical{lexical.data != nullptr ? lexical.data + first : nullptr, lexical.ld};
        const TemporalTimeline shifted{timeline.session + first, timeline.cue != nullptr ? timeline.cue + first : nullptr,
                                       timeline.day != nullptr ? timeline.day + first : nullptr};
        TemporalRanking out = temporal_batch(block, Q, shifted_lexical, nullptr, n, shifted, queries, n_windows, p, k,
                                             false, n_threads, row_order);
        for (Index b = 0; b < out.ids.rows(); ++b)
            for (Index i = 0; i < out.ids.cols(); ++i)
                if (out.ids(b, i) >= 0) out.ids(b, i) += first;
        return out;
    }
    const Index B = Q.rows();
    const Index width = std::min(k, n);
    TemporalRanking out;
    if (row_order) {
        out.ids.resize(B, 0);
        out.scores.setZero(B, n);
    } else {
        out.ids.setConstant(B, width, -1);
        out.scores.setZero(B, width);
    }
    const bool need_dense = p.alpha < 1.0;
    const RowMatrixXd Qd = Q.cast<double>();
    if (B == 0) {
        if (check_rows) detail::temporal_dense(E, Qd, 0, 0, rows, n, true, n_threads, nullptr);
        return out;
    }
    // One query's leg scores from its cosines (dense_row: n doubles, null when alpha == 1) into out.
    auto finish = [&](Index b, const double* dense_row) {
        double* base = detail::thread_scratch((rows != nullptr ? 3 : 2) * n);
        double* score = base + n;
        double* support = rows != nullptr ? score + n : nullptr;
        const Index* windows = nullptr;
        Index count = 0;
        if (queries.window_offsets != nullptr) {
            windows = queries.window_days + 2 * queries.window_offsets[b];
            count = queries.window_offsets[b + 1] - queries.window_offsets[b];
        }
        const bool intent = queries.intent != nullptr && queries.intent[b] != 0;
        detail::temporal_query_scores(dense_row, lexical.data != nullptr ? lexical.data + b * lexical.ld : nullptr,
                                      rows, n, timeline, intent, windows, count, p, base, support, score);
        if (row_order) {
            std::copy(score, score + n, out.scores.row(b).data());
            return;
        }
        TopK<double> best(width);
        for (Index i = 0; i < n; ++i) best.push(score[i], detail::row_at(rows, i));
        const auto top = best.take_sorted();
        for (Index i = 0; i < static_cast<Index>(top.size()); ++i) {
            out.ids(b, i) = top[static_cast<std::size_t>(i)].id;
            out.scores(b, i) = top[static_cast<std::size_t>(i)].score;
        }
    };
    const Index group = defaults::temporal_query_group;
    const bool cache_resident =
        static_cast<Index>(sizeof(float)) * n * E.cols() <= defaults::temporal_cache_resident_bytes;
    // The public path checks every row once (a retriever or store validated its corpus at
    // construction and passes check_rows = false): fused into the first cosine pass over a large
    // corpus, a pass of its own over cache-resident rows or when no cosine is needed.
    const bool fused_check = check_rows && need_dense && !cache_resident;
    if (check_rows && !fused_check) detail::temporal_dense(E, Qd, 0, 0, rows, n, true, n_threads, nullptr);
    if (cache_resident) {
        // The rows fit in cache (one conversation, a tenant): each thread takes whole groups of
        // queries, cosines and scores, so the batch is one parallel region.
        const Index groups = (B + group - 1) / group;
        parallel_for(0, groups, n_threads, [&](Index g) {
            const Index q0 = g * group;
            const Index nq = std::min(group, B - q0);
            // Uninitialised: every entry is written by the cosine pass before it is read.
            const std::unique_ptr<double[]> dense(need_dense ? new double[static_cast<std::size_t>(nq * n)] : nullptr);
            if (need_dense) detail::temporal_dense(E, Qd, q0, nq, rows, n, false, 1, dense.get());
            for (Index local = 0; local < nq; ++local)
                finish(q0 + local, need_dense ? dense.get() + local * n : nullptr);
        });
        return out;
    }
    // Larger corpora: queries go in blocks whose cosines fit the scratch budget (at least one scan
    // group), E is read once per block with its rows split across threads, then the queries of
    // the block are finished in parallel. A large batch never holds a B × n matrix.
    const Index by_budget = defaults::temporal_block_bytes / static_cast<Index>(sizeof(double) * n);
    const Index block = std::max<Index>(defaults::scan_query_group, std::min(B, by_budget));
    const std::unique_ptr<double[]> dense(  // uninitialised: the cosine pass writes every entry first
        need_dense ? new double[static_cast<std::size_t>(std::min(block, B) * n)] : nullptr);
    for (Index q0 = 0; q0 < B; q0 += block) {
        const Index nq = std::min(block, B - q0);
        if (need_dense) detail::temporal_dense(E, Qd, q0, nq, rows, n, fused_check && q0 == 0, n_threads, dense.get());
        parallel_for(0, nq, n_threads,
                     [&](Index local) { finish(q0 + local, need_dense ? dense.get() + local * n : nullptr); });
    }
    return out;
}

}  // namespace fieldrank
