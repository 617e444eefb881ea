#include <fieldrank/temporal.hpp>

#include <functional>
#include <optional>

#include "common.hpp"

namespace {

using namespace fieldrank;
using ByteVector = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>;
using OptionalBytes = std::optional<Eigen::Ref<const ByteVector>>;
using OptionalLexical32 = std::optional<Eigen::Ref<const RowMatrixXf>>;
using OptionalLexical64 = std::optional<Eigen::Ref<const RowMatrixXd>>;
using OptionalMoments = std::optional<std::reference_wrapper<const TemporalMoments>>;  // no copy of d² doubles

template <typename Lex, typename Matrix>
LexicalScores<Lex> lexical_view(const std::optional<Eigen::Ref<const Matrix>>& lexical, Index B, Index N) {
    if (!lexical) return {};
    if (lexical->rows() != B || lexical->cols() != N)
        fail("lexical must have shape (", B, ", ", N, "), got (", lexical->rows(), ", ", lexical->cols(), ")");
    return {lexical->data(), lexical->outerStride()};
}

template <typename Vector>
void require_length(const char* name, const std::optional<Vector>& v, Index n) {
    if (v && v->size() != n) fail(name, " must have length ", n, ", got ", v->size());
}

TemporalRanking temporal_batch_binding(const MatrixRef& E, const MatrixRef& Q, const IdRef& session, double alpha,
                                       double gamma, Index radius, double decay, double tau, double delta,
                                       Index before_days, Index after_days, Index k,
                                       const OptionalLexical32& lexical32, const OptionalLexical64& lexical64,
                                       const OptionalIds& rows, const OptionalBytes& cue, const OptionalIds& day,
                                       const OptionalBytes& intent, const OptionalIds& window_offsets,
                                       const OptionalIds& window_days, bool check_rows, Index n_threads,
                                       bool row_order, const OptionalMoments& optional_moments, bool screen) {
    const TemporalMoments* moments = optional_moments ? &optional_moments->get() : nullptr;
    const Index N = E.rows();
    const Index B = Q.rows();
    if (session.size() != N) fail("session must have length ", N, ", got ", session.size());
    require_length("cue", cue, N);
    require_length("day", day, N);
    require_length("intent", intent, B);
    require_length("window_offsets", window_offsets, B + 1);
    if (window_offsets.has_value() != window_days.has_value())
        fail("window_offsets and window_days go together");
    if (window_days && window_days->size() % 2 != 0) fail("window_days must hold (start, end) pairs");
    if (lexical32 && lexical64) fail("pass lexical scores as float32 or as float64, not both");
    const TemporalTimeline timeline{session.data(), cue ? cue->data() : nullptr, day ? day->data() : nullptr};
    const TemporalQueries queries{intent ? intent->data() : nullptr,
                                  window_offsets ? window_offsets->data() : nullptr,
                                  window_days ? window_days->data() : nullptr};
    const Index n_windows = window_days ? window_days->size() / 2 : 0;
    const TemporalParams params{alpha, gamma, radius, decay, tau, delta, before_days, after_days};
    const Index* row_ids = rows ? rows->data() : nullptr;
    const Index n = rows ? rows->size() : N;
    if (lexical64)
        return temporal_batch(E, Q, lexical_view<double>(lexical64, B, N), row_ids, n, timeline, queries, n_windows,
                              params, k, check_rows, n_threads, row_order, moments, screen);
    return temporal_batch(E, Q, lexical_view<float>(lexical32, B, N), row_ids, n, timeline, queries, n_windows, params,
                          k, check_rows, n_threads, row_order, moments, screen);
}

}  // namespace

void register_temporal(py::module_& m) {
    py::class_<TemporalRanking>(m, "NativeTemporalRanking", "(B, m) ids and float64 scores of the temporal leg.")
        .def_readonly("ids", &TemporalRanking::ids)
        .def_readonly("scores", &TemporalRanking::scores)
        .def_readonly("cosines", &TemporalRanking::cosines,
                      "with row_order and alpha < 1: (B, n) float64 cosines of the rows, in the order of rows; "
                      "else empty")
        .def_readonly("screened", &TemporalRanking::screened,
                      "With moments: the queries the fp32 screen resolved (the others were scored in full).");
    py::class_<TemporalMoments>(m, "NativeTemporalMoments",
                                "Moments of a corpus's rows for the temporal leg over all of them (temporal_moments).")
        .def_readonly("rows", &TemporalMoments::rows)
        .def_readonly("dim", &TemporalMoments::dim)
        .def_property_readonly(
            "sum", [](const TemporalMoments& mo) { return Eigen::Map<const VectorXd>(mo.sum.data(), mo.dim); },
            py::return_value_policy::reference_internal, "(d,) float64 sum of the rows (a read-only view).")
        .def_property_readonly(
            "centred",
            [](const TemporalMoments& mo) { return Eigen::Map<const RowMatrixXd>(mo.centred.data(), mo.dim, mo.dim); },
            py::return_value_policy::reference_internal,
            "(d, d) float64 centred second moment sum_i (e_i - mu)(e_i - mu)^T, mu = sum / N (a read-only view).")
        .def_readonly("max_norm_sq", &TemporalMoments::max_norm_sq);
    m.def("temporal_moments", &temporal_moments, "E"_a.noconvert(), "n_threads"_a = 0, release_gil(),
          "Moments of E (N, d) float32 for temporal_batch(moments=): sum (d,) = sum of the rows, centred (d, d) = "
          "sum of the outer products of the rows minus their mean, max_norm_sq, all float64, the same bits for any "
          "n_threads (two passes over E, split across threads). They belong to this array: temporal_batch refuses "
          "them with another one, and E must not be modified in place afterwards.");
    m.def("temporal_batch", &temporal_batch_binding, "E"_a.noconvert(), "Q"_a.noconvert(), "session"_a.noconvert(),
          "alpha"_a, "gamma"_a, "radius"_a, "decay"_a, "tau"_a, "delta"_a, "before_days"_a, "after_days"_a, "k"_a,
          "lexical32"_a.noconvert() = py::none(), "lexical64"_a.noconvert() = py::none(),
          "rows"_a.noconvert() = py::none(), "cue"_a.noconvert() = py::none(), "day"_a.noconvert() = py::none(),
          "intent"_a.noconvert() = py::none(), "window_offsets"_a.noconvert() = py::none(),
          "window_days"_a.noconvert() = py::none(), "check_rows"_a = true, "n_threads"_a = 0, "row_order"_a = false,
          "moments"_a = py::none(), "screen"_a = true, release_gil(),
          "The time-aware leg for every row of Q (B, d) float32 over E (N, d) float32 (fieldrank.temporal), "
          "session (N,) int64 keys, the leg's parameters and k; lexical (B, N) float32 or float64 scores (one of lexical32 / lexical64; none when alpha == 0), rows "
          "(n,) sorted unique int64 (None: all N), cue (N,) uint8, day (N,) int64 "
          "session days (INT64_MIN: none), intent (B,) uint8, window_offsets (B + 1,) int64 into window_days "
          "(2W,) int64 inclusive (start, end) day pairs. check_rows=False skips the per-row finite / norm check "
          "for a corpus validated once. Returns NativeTemporalRanking of (B, min(k, n)); row_order=True: "
          "scores (B, n) of every row in the order of rows (all N when None), ids empty, k unused. moments "
          "(temporal_moments of this E): over all rows (rows None, top-k, alpha < 1) the cosines' mean and sd come "
          "from them and fp32 cosines screen the rows, only those near the k-th score re-scored in double; "
          "screen=False scores every row in double with the same statistics (the same result).");
}
