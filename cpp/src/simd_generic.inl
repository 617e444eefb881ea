// The kernels of kernel_table.hpp written once over a small set of vector operations, `Ops`.
// Each variant translation unit (kernels_<variant>.cpp) defines `Ops` inside an anonymous
// namespace and then includes this file there, so every function below has internal linkage and
// is compiled with that unit's instruction set only. This file includes nothing itself.
//
// Ops provides:
//   L16            16 float lanes (one zmm, two ymm, or a plain array)
//   D8             8 double lanes
//   zero, set1, load, store, load_bf16, add, sub, mul, max, fmadd(a, b, c) = a·b + c,
//   fnmadd(a, b, c) = c - a·b, exp, reduce (the fixed halving tree), reduce4 (four trees at once)
//   zerod, load_f32_as_d, loadd, fmaddd, reduced
//   kRowsSingle    rows per tile when scoring one query
//   kQueriesStream queries per row when scoring several (one row at a time)
//   kRowsMulti, kQueriesMulti   tile shape for several queries and for the Gram matrix
//   int8_tile<R>, kRowsInt8   (optional) exact int32 dots of R int8 rows with the int8 query,
//                  R = kRowsInt8 at a time, for score_int8_tiled
//
// Order of every fp32 dot product, whatever the tile shape or position: per 16-element block
// acc = fmadd(x, y, acc) on 16 lanes, then reduce(acc), then + Σ tail x_j·y_j in j order. All
// element-wise kernels run over lengths that are multiples of 16 (callers pad with zeros), so
// no element is ever computed by a different formula than its neighbours.

constexpr int kLanes = 16;

// `ahead` (may be null) points at the R rows of the next tile: one cache line of each is
// prefetched per 16 elements, so the next rows stream in while this tile computes.
template <int R, int QB, bool NORM>
inline void tile(const float* const* rows, const float* const* qs, Index d, float* out, Index ld_out, float* norms,
                 const float* const* ahead = nullptr) {
    using L16 = typename Ops::L16;
    constexpr int kAcc = R * QB + (NORM ? R : 0);
    L16 acc[kAcc];
#pragma GCC unroll 32
    for (int a = 0; a < kAcc; ++a) acc[a] = Ops::zero();
    Index j = 0;
    for (; j + kLanes <= d; j += kLanes) {
        if (ahead != nullptr) {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) Ops::prefetch(ahead[r] + j);
        }
        L16 x[R];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) x[r] = Ops::load(rows[r] + j);
#pragma GCC unroll 16
        for (int b = 0; b < QB; ++b) {
            const L16 y = Ops::load(qs[b] + j);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) acc[b * R + r] = Ops::fmadd(x[r], y, acc[b * R + r]);
        }
        if (NORM) {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) acc[QB * R + r] = Ops::fmadd(x[r], x[r], acc[QB * R + r]);
        }
    }
    float sums[kAcc];
    int a = 0;
    for (; a + 4 <= kAcc; a += 4) Ops::reduce4(acc + a, sums + a);
    for (; a < kAcc; ++a) sums[a] = Ops::reduce(acc[a]);
    for (int b = 0; b < QB; ++b) {
        for (int r = 0; r < R; ++r) {
            float tail = 0.0f;
            for (Index t = j; t < d; ++t) tail += rows[r][t] * qs[b][t];
            out[b * ld_out + r] = sums[b * R + r] + tail;
        }
    }
    if (NORM) {
        for (int r = 0; r < R; ++r) {
            float tail = 0.0f;
            for (Index t = j; t < d; ++t) tail += rows[r][t] * rows[r][t];
            norms[r] = sums[QB * R + r] + tail;
        }
    }
}

// tile<R, qb, norm> for a run-time qb in [1, QB].
template <int R, int QB, bool NORM>
inline void tile_queries(int qb, const float* const* rows, const float* const* qs, Index d, float* out, Index ld_out,
                         float* norms, const float* const* ahead = nullptr) {
    if constexpr (QB > 1) {
        if (qb < QB) {
            tile_queries<R, QB - 1, NORM>(qb, rows, qs, d, out, ld_out, norms, ahead);
            return;
        }
    }
    tile<R, QB, NORM>(rows, qs, d, out, ld_out, norms, ahead);
}

// tile for run-time r in [1, R] and qb in [1, QB].
template <int R, int QB, bool NORM>
inline void tile_any(int r, int qb, const float* const* rows, const float* const* qs, Index d, float* out,
                     Index ld_out, float* norms, const float* const* ahead = nullptr) {
    if constexpr (R > 1) {
        if (r < R) {
            tile_any<R - 1, QB, NORM>(r, qb, rows, qs, d, out, ld_out, norms, nullptr);
            return;
        }
    }
    tile_queries<R, QB, NORM>(qb, rows, qs, d, out, ld_out, norms, ahead);
}

// Scores the rows of one tile against every query, QB queries at a time (the rows stay in L1);
// the first pass over the tile prefetches the next one.
template <int R, int QB>
inline void score_tile_rows(int r, const float* const* rows, const float* Q, Index ldq, Index nq, Index d, float* out,
                            Index ld_out, float* norms, const float* const* ahead) {
    const float* qs[QB];
    for (Index b0 = 0; b0 < nq; b0 += QB) {
        const int qb = static_cast<int>(nq - b0 < QB ? nq - b0 : QB);
        for (int b = 0; b < qb; ++b) qs[b] = Q + (b0 + b) * ldq;
        const float* const* prefetch = b0 == 0 ? ahead : nullptr;
        if (b0 == 0 && norms != nullptr)
            tile_any<R, QB, true>(r, qb, rows, qs, d, out + b0 * ld_out, ld_out, norms, prefetch);
        else
            tile_any<R, QB, false>(r, qb, rows, qs, d, out + b0 * ld_out, ld_out, nullptr, prefetch);
    }
}

template <int R, int QB>
inline void score_rows(const float* base, Index stride, const Index* ids, Index n, Index d, const float* Q, Index ldq,
                       Index nq, float* dots, Index ld_dots, float* norms) {
    const float* rows[R];
    const float* ahead[R];
    for (int i = 0; i < R && i < n; ++i) rows[i] = base + (ids != nullptr ? ids[i] : i) * stride;
    for (Index r0 = 0; r0 < n; r0 += R) {
        const int r = static_cast<int>(n - r0 < R ? n - r0 : R);
        const Index next = r0 + R;
        const bool full_next = next + R <= n;
        if (full_next)
            for (int i = 0; i < R; ++i) ahead[i] = base + (ids != nullptr ? ids[next + i] : next + i) * stride;
        score_tile_rows<R, QB>(r, rows, Q, ldq, nq, d, dots + r0, ld_dots, norms != nullptr ? norms + r0 : nullptr,
                               full_next && r == R ? ahead : nullptr);
        if (full_next) {
            for (int i = 0; i < R; ++i) rows[i] = ahead[i];
        } else {
            for (int i = 0; i < R && next + i < n; ++i) rows[i] = base + (ids != nullptr ? ids[next + i] : next + i) * stride;
        }
    }
}

constexpr int kRowsStream = 1;  // rows per tile when several queries are scored: one stream

// Several queries: one row at a time against up to kQueriesStream queries held in L1, so E is
// read as a single stream (a tile of several rows pulls several streams from memory at once and
// ran at a third of the bandwidth) while each row feeds kQueriesStream FMAs per load.
void score_f32(const float* base, Index stride, const Index* ids, Index n, Index d, const float* Q, Index ldq,
               Index nq, float* dots, Index ld_dots, float* norms) {
    if (nq == 1)
        score_rows<Ops::kRowsSingle, 1>(base, stride, ids, n, d, Q, ldq, nq, dots, ld_dots, norms);
    else
        score_rows<kRowsStream, Ops::kQueriesStream>(base, stride, ids, n, d, Q, ldq, nq, dots, ld_dots, norms);
}

// One query over n contiguous rows, in tiles of kRowsSingle rows: kRowsSingle independent FMA
// chains (a single row is one chain, bound by the FMA latency: it ran at 2/3 of the read probe
// from L2), each row's dot and square norm from the same loaded registers. With prefetch_rows > 0
// each cache line of a tile's rows is prefetched from the row that many rows further on, so the
// lines arrive in L1 while this tile computes. Same per-row arithmetic as score_f32.
void score_f32_stream(const float* base, Index stride, Index n, Index d, const float* q, float* out, float* norms,
                      Index prefetch_rows) {
    constexpr int R = Ops::kRowsSingle;
    const float* rows[R];
    const float* ahead[R];
    Index r0 = 0;
    for (; r0 + R <= n; r0 += R) {
        for (int i = 0; i < R; ++i) {
            rows[i] = base + (r0 + i) * stride;
            ahead[i] = rows[i] + prefetch_rows * stride;
        }
        const float* const* prefetch = prefetch_rows > 0 && r0 + R + prefetch_rows <= n ? ahead : nullptr;
        if (norms != nullptr)
            tile<R, 1, true>(rows, &q, d, out + r0, 1, norms + r0, prefetch);
        else
            tile<R, 1, false>(rows, &q, d, out + r0, 1, nullptr, prefetch);
    }
    if (r0 < n) {
        for (Index i = r0; i < n; ++i) rows[i - r0] = base + i * stride;
        const int r = static_cast<int>(n - r0);
        if (norms != nullptr)
            tile_any<R, 1, true>(r, 1, rows, &q, d, out + r0, 1, norms + r0);
        else
            tile_any<R, 1, false>(r, 1, rows, &q, d, out + r0, 1, nullptr);
    }
}

void gram(const float* base, Index stride, const Index* ids, Index n, Index d, float* G, Index ldg) {
    constexpr int R = Ops::kRowsMulti;
    constexpr int QB = Ops::kQueriesMulti;
    const float* rows[R];
    const float* qs[QB];
    float block[QB * R];
    for (Index i0 = 0; i0 < n; i0 += R) {
        const int r = static_cast<int>(n - i0 < R ? n - i0 : R);
        for (int i = 0; i < r; ++i) rows[i] = base + (ids != nullptr ? ids[i0 + i] : i0 + i) * stride;
        const Index last = i0 + r;  // columns j < last reach the lower triangle of this row block
        for (Index j0 = 0; j0 < last; j0 += QB) {
            const int qb = static_cast<int>(last - j0 < QB ? last - j0 : QB);
            for (int b = 0; b < qb; ++b) qs[b] = base + (ids != nullptr ? ids[j0 + b] : j0 + b) * stride;
            tile_any<R, QB, false>(r, qb, rows, qs, d, block, R, nullptr);
            for (int b = 0; b < qb; ++b)
                for (int i = 0; i < r; ++i)
                    if (j0 + b <= i0 + i) G[(i0 + i) * ldg + (j0 + b)] = block[b * R + i];
        }
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < i; ++j) G[j * ldg + i] = G[i * ldg + j];
}

// y[col0 + 16b + l] = Σ_t point[nz[t]] · G[nz[t], col0 + 16b + l] for b < NB. The terms are
// summed in runs of kAxpyRun consecutive t, each run from zero, the runs then added in order: a
// shallower summation than one long chain (the error grows with the run length plus the number
// of runs, not with the number of terms), and the same for every element, whatever its position.
constexpr Index kAxpyRun = 16;

template <int NB>
inline void axpy_columns(const float* G, Index ldg, const Index* nz, Index count, const float* point, Index col0,
                         float* y) {
    using L16 = typename Ops::L16;
    L16 total[NB];
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) total[b] = Ops::zero();
    for (Index t0 = 0; t0 < count; t0 += kAxpyRun) {
        const Index t1 = t0 + kAxpyRun < count ? t0 + kAxpyRun : count;
        L16 run[NB];
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) run[b] = Ops::zero();
        for (Index t = t0; t < t1; ++t) {
            const Index j = nz[t];
            const L16 weight = Ops::set1(point[j]);
            const float* row = G + j * ldg + col0;
#pragma GCC unroll 16
            for (int b = 0; b < NB; ++b) run[b] = Ops::fmadd(weight, Ops::load(row + kLanes * b), run[b]);
        }
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) total[b] = Ops::add(total[b], run[b]);
    }
#pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) Ops::store(y + col0 + kLanes * b, total[b]);
}

template <int NB>
inline void axpy_columns_any(int nb, const float* G, Index ldg, const Index* nz, Index count, const float* point,
                             Index col0, float* y) {
    if constexpr (NB > 1) {
        if (nb < NB) {
            axpy_columns_any<NB - 1>(nb, G, ldg, nz, count, point, col0, y);
            return;
        }
    }
    axpy_columns<NB>(G, ldg, nz, count, point, col0, y);
}

void pg_step(const float* G, Index ldg, Index n, const float* point, const float* r, float lam, float step, float* grad,
             float* a_out, Index* scratch) {
    // G is symmetric, so (G point)_i = Σ_j point_j G_ji: whole rows of G, weighted by the non-zero
    // entries of the (projected, hence sparse) iterate.
    Index count = 0;
    for (Index j = 0; j < n; ++j) {
        scratch[count] = j;
        count += point[j] != 0.0f ? 1 : 0;
    }
    constexpr int kGroup = Ops::kAxpyBlocks;
    for (Index col0 = 0; col0 < ldg; col0 += kGroup * kLanes) {
        const Index left = (ldg - col0) / kLanes;
        axpy_columns_any<kGroup>(static_cast<int>(left < kGroup ? left : kGroup), G, ldg, scratch, count, point, col0,
                                 grad);
    }
    using L16 = typename Ops::L16;
    const L16 lam_v = Ops::set1(lam);
    const L16 step_v = Ops::set1(step);
    const L16 zero = Ops::zero();
    for (Index i = 0; i < ldg; i += kLanes) {
        const L16 p = Ops::load(point + i);
        const L16 g = Ops::add(Ops::load(grad + i), Ops::sub(Ops::mul(lam_v, p), Ops::load(r + i)));
        Ops::store(grad + i, g);
        Ops::store(a_out + i, Ops::max(zero, Ops::fnmadd(step_v, g, p)));
    }
}

void matvec_f64(const float* G, Index ldg, Index n, const double* v, double* y) {
    using D8 = typename Ops::D8;
    Index i = 0;
    for (; i + 4 <= n; i += 4) {
        D8 acc0 = Ops::zerod(), acc1 = Ops::zerod(), acc2 = Ops::zerod(), acc3 = Ops::zerod();
        const float* g0 = G + i * ldg;
        for (Index j = 0; j < ldg; j += 8) {
            const D8 x = Ops::loadd(v + j);
            acc0 = Ops::fmaddd(Ops::load_f32_as_d(g0 + j), x, acc0);
            acc1 = Ops::fmaddd(Ops::load_f32_as_d(g0 + ldg + j), x, acc1);
            acc2 = Ops::fmaddd(Ops::load_f32_as_d(g0 + 2 * ldg + j), x, acc2);
            acc3 = Ops::fmaddd(Ops::load_f32_as_d(g0 + 3 * ldg + j), x, acc3);
        }
        y[i] = Ops::reduced(acc0);
        y[i + 1] = Ops::reduced(acc1);
        y[i + 2] = Ops::reduced(acc2);
        y[i + 3] = Ops::reduced(acc3);
    }
    for (; i < n; ++i) {
        D8 acc = Ops::zerod();
        for (Index j = 0; j < ldg; j += 8) acc = Ops::fmaddd(Ops::load_f32_as_d(G + i * ldg + j), Ops::loadd(v + j), acc);
        y[i] = Ops::reduced(acc);
    }
}

double read_sum(const float* x, Index n) {
    using L16 = typename Ops::L16;
    L16 acc[4] = {Ops::zero(), Ops::zero(), Ops::zero(), Ops::zero()};
    Index i = 0;
    for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
#pragma GCC unroll 4
        for (int a = 0; a < 4; ++a) acc[a] = Ops::add(acc[a], Ops::load(x + i + a * kLanes));
    }
    float sums[4];
    Ops::reduce4(acc, sums);
    double total = static_cast<double>(sums[0]) + sums[1] + sums[2] + sums[3];
    for (; i < n; ++i) total += x[i];
    return total;
}

double dot_f64(const double* x, const double* y, Index n) {
    using D8 = typename Ops::D8;
    D8 acc0 = Ops::zerod(), acc1 = Ops::zerod();
    for (Index i = 0; i < n; i += 16) {
        acc0 = Ops::fmaddd(Ops::loadd(x + i), Ops::loadd(y + i), acc0);
        acc1 = Ops::fmaddd(Ops::loadd(x + i + 8), Ops::loadd(y + i + 8), acc1);
    }
    return Ops::reduced(acc0) + Ops::reduced(acc1);
}

void axpy_f64(double alpha, const double* x, double* y, Index n) {
    using D8 = typename Ops::D8;
    const D8 a = Ops::set1d(alpha);
    for (Index i = 0; i < n; i += 8) Ops::stored(y + i, Ops::fmaddd(a, Ops::loadd(x + i), Ops::loadd(y + i)));
}

void cfs_update(const float* column, const float* base, Index n, float inv_two_sigma_sq, float beta, float* field,
                float* value) {
    using L16 = typename Ops::L16;
    const L16 two = Ops::set1(2.0f);
    const L16 zero = Ops::zero();
    const L16 neg_inv = Ops::set1(-inv_two_sigma_sq);
    const L16 beta_v = Ops::set1(beta);
    // Values saturate at -FLT_MAX: beta near float32's max times a field above 1 would be -inf.
    // Saturated candidates then tie, and the tie rule picks them in id order.
    const L16 lowest = Ops::set1(std::numeric_limits<float>::lowest());
    for (Index i = 0; i < n; i += kLanes) {
        const L16 distance_sq = Ops::max(zero, Ops::fnmadd(two, Ops::load(column + i), two));
        const L16 f = Ops::add(Ops::load(field + i), Ops::exp(Ops::mul(distance_sq, neg_inv)));
        Ops::store(field + i, f);
        Ops::store(value + i, Ops::max(lowest, Ops::fnmadd(beta_v, f, Ops::load(base + i))));
    }
}

void mmr_update(const float* column, const float* sims, Index n, float relevance, float redundancy, bool first,
                float* max_sim, float* value) {
    using L16 = typename Ops::L16;
    const L16 rel = Ops::set1(relevance);
    const L16 red = Ops::set1(redundancy);
    for (Index i = 0; i < n; i += kLanes) {
        const L16 c = Ops::load(column + i);
        const L16 m = first ? c : Ops::max(Ops::load(max_sim + i), c);
        Ops::store(max_sim + i, m);
        Ops::store(value + i, Ops::fnmadd(red, m, Ops::mul(rel, Ops::load(sims + i))));
    }
}


// Runs tile(rows, ahead, out) over row tiles of R (then single rows), row r at base + id(r)·stride;
// `ahead` holds the next tile's rows for prefetching, or is null.
template <int R, typename T, typename TileR, typename Tile1>
inline void for_row_tiles(const T* base, Index stride, const Index* ids, Index n, float* out, TileR tile_r,
                          Tile1 tile_1) {
    const T* rows[R];
    const T* ahead[R];
    Index r0 = 0;
    if (ids == nullptr) {
        // Contiguous rows: one after the other, a single memory stream that the hardware
        // prefetchers follow (see score_f32_stream; no software prefetch).
        for (; r0 < n; ++r0) {
            rows[0] = base + r0 * stride;
            tile_1(rows, nullptr, out + r0);
        }
        return;
    }
    for (; r0 + R <= n; r0 += R) {
        for (int i = 0; i < R; ++i) rows[i] = base + (ids != nullptr ? ids[r0 + i] : r0 + i) * stride;
        const bool next = r0 + 2 * R <= n;
        if (next)
            for (int i = 0; i < R; ++i) ahead[i] = base + (ids != nullptr ? ids[r0 + R + i] : r0 + R + i) * stride;
        tile_r(rows, next ? ahead : nullptr, out + r0);
    }
    for (; r0 < n; ++r0) {
        rows[0] = base + (ids != nullptr ? ids[r0] : r0) * stride;
        tile_1(rows, nullptr, out + r0);
    }
}

// The int8 scan for the variants whose Ops has int8_tile<R>(rows, ahead, q8, d, dots), the exact
// int32 dots of R rows (R = Ops::kRowsInt8), scaled here. O is Ops, a template parameter so that
// variants without an int8 tile (portable) never look the member up.
template <typename O = Ops>
void score_int8_tiled(const std::int8_t* base, Index stride, const Index* ids, Index n, Index d, const std::int8_t* q8,
                      const float* row_scale, const std::int32_t* row_sum, float q_scale, float* out) {
    (void)row_sum;
    constexpr int R = O::kRowsInt8;
    for_row_tiles<R>(
        base, stride, ids, n, out,
        [&](const std::int8_t* const* rows, const std::int8_t* const* ahead, float* o) {
            std::int32_t dots[R];
            O::template int8_tile<R>(rows, ahead, q8, d, dots);
            const Index r0 = o - out;
            for (int i = 0; i < R; ++i)
                o[i] = static_cast<float>(dots[i]) * row_scale[ids != nullptr ? ids[r0 + i] : r0 + i] * q_scale;
        },
        [&](const std::int8_t* const* rows, const std::int8_t* const* ahead, float* o) {
            std::int32_t dot;
            O::template int8_tile<1>(rows, ahead, q8, d, &dot);
            const Index r0 = o - out;
            o[0] = static_cast<float>(dot) * row_scale[ids != nullptr ? ids[r0] : r0] * q_scale;
        });
}

// bf16 rows widened to fp32 and dotted with the fp32 query in the fixed lane order.
template <int R>
inline void bf16_tile(const std::uint16_t* const* rows, const std::uint16_t* const* ahead, const float* q, Index d,
                      float* out) {
    using L16 = typename Ops::L16;
    L16 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = Ops::zero();
    Index j = 0;
    for (; j + kLanes <= d; j += kLanes) {
        if (ahead != nullptr && (j & 31) == 0) {  // one cache line (32 bf16) of each next row
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) Ops::prefetch(ahead[r] + j);
        }
        const L16 y = Ops::load(q + j);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r] = Ops::fmadd(Ops::load_bf16(rows[r] + j), y, acc[r]);
    }
    for (int r = 0; r < R; ++r) {
        float tail = 0.0f;
        for (Index t = j; t < d; ++t) {
            const std::uint32_t bits = static_cast<std::uint32_t>(rows[r][t]) << 16;
            float x;
            std::memcpy(&x, &bits, sizeof x);
            tail += x * q[t];
        }
        out[r] = Ops::reduce(acc[r]) + tail;
    }
}

void score_bf16_generic(const std::uint16_t* base, Index stride, const Index* ids, Index n, Index d, const float* q,
                        float* out) {
    constexpr int R = Ops::kRowsSingle;
    for_row_tiles<R>(
        base, stride, ids, n, out,
        [&](const std::uint16_t* const* rows, const std::uint16_t* const* ahead, float* o) {
            bf16_tile<R>(rows, ahead, q, d, o);
        },
        [&](const std::uint16_t* const* rows, const std::uint16_t* const* ahead, float* o) {
            bf16_tile<1>(rows, ahead, q, d, o);
        });
}

// R rows against QB queries (and the rows' squared norms when NORM), every sum in double. Two
// 8-lane accumulators per (row, query) cover a 16-element block; each row block is widened once
// and feeds all QB queries, each query block feeds all R rows. Products of floats are exact in
// double, so fmaddd equals mul + add here and a result depends only on the order of the sums, which
// is the same for every (row, query) whatever R, QB or the tile's position (see kernel_table.hpp).
template <int R, int QB, bool NORM>
inline void tile_f64(const float* const* rows, const double* const* qs, Index d, double* out, Index ld_out,
                     double* norms, const float* const* ahead) {
    using D8 = typename Ops::D8;
    constexpr int kAcc = 2 * R * QB + (NORM ? 2 * R : 0);
    D8 acc[kAcc];
#pragma GCC unroll 32
    for (int a = 0; a < kAcc; ++a) acc[a] = Ops::zerod();
    Index j = 0;
    for (; j + kLanes <= d; j += kLanes) {
        // The two 8-lane halves of the block one after the other: R widened rows live at a time, not
        // 2R (with 2·R·QB accumulators, 2R would not fit avx512's 32 registers at R = 8 and spill).
        // Each accumulator still takes the same products in the same order.
        if (ahead != nullptr) {  // the next tile's rows, one cache line each per 16 elements
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) Ops::prefetch(ahead[r] + j);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            D8 x[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) x[r] = Ops::load_f32_as_d(rows[r] + j + 8 * h);
#pragma GCC unroll 8
            for (int b = 0; b < QB; ++b) {
                const D8 y = Ops::loadd(qs[b] + j + 8 * h);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[2 * (b * R + r) + h] = Ops::fmaddd(x[r], y, acc[2 * (b * R + r) + h]);
            }
            if (NORM) {
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[2 * (QB * R + r) + h] = Ops::fmaddd(x[r], x[r], acc[2 * (QB * R + r) + h]);
            }
        }
    }
    for (int b = 0; b < QB; ++b) {
        for (int r = 0; r < R; ++r) {
            double sum = Ops::reduced(acc[2 * (b * R + r)]) + Ops::reduced(acc[2 * (b * R + r) + 1]);
            for (Index t = j; t < d; ++t) sum += static_cast<double>(rows[r][t]) * qs[b][t];
            out[b * ld_out + r] = sum;
        }
    }
    if (NORM) {
        for (int r = 0; r < R; ++r) {
            double sum = Ops::reduced(acc[2 * (QB * R + r)]) + Ops::reduced(acc[2 * (QB * R + r) + 1]);
            for (Index t = j; t < d; ++t) sum += static_cast<double>(rows[r][t]) * static_cast<double>(rows[r][t]);
            norms[r] = sum;
        }
    }
}

// tile_f64 for run-time r in [1, R] and qb in [0, QB] (qb = 0: norms only).
template <int R, int QB, bool NORM>
inline void tile_f64_any(int r, int qb, const float* const* rows, const double* const* qs, Index d, double* out,
                         Index ld_out, double* norms, const float* const* ahead) {
    if constexpr (R > 1) {
        if (r < R) {
            tile_f64_any<R - 1, QB, NORM>(r, qb, rows, qs, d, out, ld_out, norms, nullptr);
            return;
        }
    }
    if constexpr (QB > 0) {
        if (qb < QB) {
            tile_f64_any<R, QB - 1, NORM>(r, qb, rows, qs, d, out, ld_out, norms, ahead);
            return;
        }
    }
    if constexpr (QB > 0 || NORM) tile_f64<R, QB, NORM>(rows, qs, d, out, ld_out, norms, ahead);
}

// Rows per tile: one query takes twice the fp32 single-query tile, at most 8 rows (16 independent
// sums in 16 registers with avx512, enough to hide the FMA latency and the widening; 4 rows with
// avx2, whose D8 takes two registers); several queries two rows by four queries (sixteen sums,
// each row and query block loaded once per tile).
constexpr int kRowsF64Single = 2 * Ops::kRowsSingle < 8 ? 2 * Ops::kRowsSingle : 8;
constexpr int kRowsF64Multi = 2;
constexpr int kQueriesF64 = 4;

template <int R, int QB>
inline void score_f32_f64_tiles(const float* base, Index stride, const Index* ids, Index n, Index d, const double* Qd,
                                Index ldq, Index nq, double* out, Index ld_out, double* norms) {
    const float* rows[R];
    const float* ahead[R];
    const double* qs[QB];
    for (Index r0 = 0; r0 < n; r0 += R) {
        const int r = static_cast<int>(n - r0 < R ? n - r0 : R);
        for (int i = 0; i < r; ++i) rows[i] = base + (ids != nullptr ? ids[r0 + i] : r0 + i) * stride;
        // The first pass over a tile prefetches the next full one (software prefetch, as the fp32 scan).
        const bool next = r0 + 2 * R <= n;
        if (next)
            for (int i = 0; i < R; ++i) ahead[i] = base + (ids != nullptr ? ids[r0 + R + i] : r0 + R + i) * stride;
        // The first group of queries also takes the norms; later groups find the rows in L1.
        Index b0 = 0;
        do {
            const int qb = static_cast<int>(nq - b0 < QB ? nq - b0 : QB);
            for (int b = 0; b < qb; ++b) qs[b] = Qd + (b0 + b) * ldq;
            double* o = qb > 0 ? out + b0 * ld_out + r0 : nullptr;  // nq = 0: norms only, out unused
            const float* const* prefetch = b0 == 0 && next ? ahead : nullptr;
            if (b0 == 0 && norms != nullptr)
                tile_f64_any<R, QB, true>(r, qb, rows, qs, d, o, ld_out, norms + r0, prefetch);
            else if (qb > 0)
                tile_f64_any<R, QB, false>(r, qb, rows, qs, d, o, ld_out, nullptr, prefetch);
            b0 += QB;
        } while (b0 < nq);
    }
}

[[maybe_unused]] void score_f32_f64(const float* base, Index stride, const Index* ids, Index n, Index d,
                                    const double* Qd, Index ldq, Index nq, double* out, Index ld_out, double* norms) {
    if (nq <= 1)
        score_f32_f64_tiles<kRowsF64Single, 1>(base, stride, ids, n, d, Qd, ldq, nq, out, ld_out, norms);
    else
        score_f32_f64_tiles<kRowsF64Multi, kQueriesF64>(base, stride, ids, n, d, Qd, ldq, nq, out, ld_out, norms);
}

// ---------------------------------------------------------------- the temporal leg's sweeps
// Plain element-wise loops that each variant's compiler vectorises at its own width; the
// operations per element are fixed (kernel_table.hpp), so the bits do not depend on the width.

// std::max's rule, (a < b) ? b : a (this file includes nothing).
inline double max_of(double a, double b) { return a < b ? b : a; }

template <typename Lex>
inline double lex_at(const Lex* lex, const Index* rows, Index i) {
    return static_cast<double>(lex[rows != nullptr ? rows[i] : i]);
}

template <typename Lex>
inline void temporal_blend_of(const double* dense, const Lex* lex, const Index* rows, Index n, double share,
                              double dense_mean, double dense_sd, double alpha, double lex_mean, double lex_sd,
                              double* base) {
    if (dense != nullptr && lex != nullptr) {
        if (rows == nullptr) {
            for (Index i = 0; i < n; ++i)
                base[i] = share * ((dense[i] - dense_mean) / dense_sd) +
                          alpha * ((static_cast<double>(lex[i]) - lex_mean) / lex_sd);
        } else {
            for (Index i = 0; i < n; ++i)
                base[i] = share * ((dense[i] - dense_mean) / dense_sd) + alpha * ((lex_at(lex, rows, i) - lex_mean) / lex_sd);
        }
    } else if (dense != nullptr) {
        for (Index i = 0; i < n; ++i) base[i] = share * ((dense[i] - dense_mean) / dense_sd);
    } else if (rows == nullptr) {
        for (Index i = 0; i < n; ++i) base[i] = 0.0 + alpha * ((static_cast<double>(lex[i]) - lex_mean) / lex_sd);
    } else {
        for (Index i = 0; i < n; ++i) base[i] = 0.0 + alpha * ((lex_at(lex, rows, i) - lex_mean) / lex_sd);
    }
}

[[maybe_unused]] void temporal_blend(const double* dense, const float* lex32, const double* lex64, const Index* rows,
                                     Index n, double share, double dense_mean, double dense_sd, double alpha,
                                     double lex_mean, double lex_sd, double* base) {
    if (lex64 != nullptr)
        temporal_blend_of(dense, lex64, rows, n, share, dense_mean, dense_sd, alpha, lex_mean, lex_sd, base);
    else
        temporal_blend_of(dense, lex32, rows, n, share, dense_mean, dense_sd, alpha, lex_mean, lex_sd, base);
}

// Rows of support held at a time (in L1): each neighbour distance is one vectorised sweep over
// the block instead of a branchy inner loop per row.
constexpr Index kSupportBlock = 512;

[[maybe_unused]] void temporal_support(const double* base, const Index* session, Index n, const double* factors,
                                       Index radius, double gamma, double* score) {
    double support[kSupportBlock];
    for (Index b0 = 0; b0 < n; b0 += kSupportBlock) {
        const Index m = n - b0 < kSupportBlock ? n - b0 : kSupportBlock;
        const double* b = base + b0;
        const Index* s = session + b0;
        for (Index i = 0; i < m; ++i) support[i] = 0.0;
        for (Index dist = 1; dist <= radius; ++dist) {
            const double factor = factors[dist - 1];
            // The neighbour after: b0 + i + dist < n.
            const Index after_end = n - b0 - dist < m ? n - b0 - dist : m;
            for (Index i = 0; i < after_end; ++i) {
                const double same = static_cast<double>(s[i + dist] == s[i]);
                support[i] = max_of(support[i], same * (factor * max_of(b[i + dist], 0.0)));
            }
            // The neighbour before: b0 + i - dist >= 0.
            for (Index i = dist > b0 ? dist - b0 : 0; i < m; ++i) {
                const double same = static_cast<double>(s[i - dist] == s[i]);
                support[i] = max_of(support[i], same * (factor * max_of(b[i - dist], 0.0)));
            }
        }
        for (Index i = 0; i < m; ++i) score[b0 + i] = b[i] + gamma * support[i];
    }
}

// ---------------------------------------------------------------- the temporal leg's moments

// Accumulators of quadratic_forms_f64: four independent 8-lane sums hide the add latency.
constexpr Index kQuadAccumulators = 4;

[[maybe_unused]] void quadratic_forms_f64(const double* M, Index d, const double* Qd, Index ldq, Index nq,
                                          double* out) {
    using D8 = typename Ops::D8;
    for (Index b = 0; b < nq; ++b) out[b] = 0.0;
    constexpr Index kStep = 8 * kQuadAccumulators;
    for (Index j = 0; j < d; ++j) {
        const double* row = M + j * d;
        for (Index b = 0; b < nq; ++b) {
            const double* q = Qd + b * ldq;
            D8 acc[kQuadAccumulators];
            for (Index a = 0; a < kQuadAccumulators; ++a) acc[a] = Ops::zerod();
            Index k = 0;
            for (; k + kStep <= j; k += kStep) {
#pragma GCC unroll 4
                for (Index a = 0; a < kQuadAccumulators; ++a)
                    acc[a] = Ops::addd(acc[a], Ops::muld(Ops::loadd(row + k + 8 * a), Ops::loadd(q + k + 8 * a)));
            }
            const D8 sum = Ops::addd(Ops::addd(acc[0], acc[1]), Ops::addd(acc[2], acc[3]));
            double inner = Ops::reduced(sum);
            for (; k < j; ++k) inner += row[k] * q[k];
            out[b] += q[j] * (row[j] * q[j] + 2.0 * inner);
        }
    }
}

// Columns per tile of outer_sum_f64 (two 8-lane vectors); its rows per tile are kRowsMulti.
constexpr Index kOuterColumns = 16;

// One tile: RA rows (X columns row0 …) × 16 columns (c …) summed over the len rows of X in order.
template <int RA>
inline void outer_sum_tile(const double* X, Index ldx, Index len, Index row0, Index c, double* out, Index ld_out) {
    using D8 = typename Ops::D8;
    D8 acc[RA][2];
    for (int r = 0; r < RA; ++r) acc[r][0] = acc[r][1] = Ops::zerod();
    for (Index t = 0; t < len; ++t) {
        const double* x = X + t * ldx;
        const D8 y0 = Ops::loadd(x + c);
        const D8 y1 = Ops::loadd(x + c + 8);
        for (int r = 0; r < RA; ++r) {
            const D8 b = Ops::set1d(x[row0 + r]);
            acc[r][0] = Ops::addd(acc[r][0], Ops::muld(b, y0));
            acc[r][1] = Ops::addd(acc[r][1], Ops::muld(b, y1));
        }
    }
    for (int r = 0; r < RA; ++r) {
        Ops::stored(out + r * ld_out + c, acc[r][0]);
        Ops::stored(out + r * ld_out + c + 8, acc[r][1]);
    }
}

[[maybe_unused]] void outer_sum_f64(const double* X, Index ldx, Index len, Index a0, Index na, Index nc, double* out,
                                    Index ld_out) {
    constexpr int RA = Ops::kRowsMulti;
    Index a = 0;
    for (; a + RA <= na; a += RA) {
        Index c = 0;
        for (; c + kOuterColumns <= nc; c += kOuterColumns)
            outer_sum_tile<RA>(X, ldx, len, a0 + a, c, out + a * ld_out, ld_out);
        for (int r = 0; r < RA; ++r)
            for (Index cc = c; cc < nc; ++cc) {
                double value = 0.0;
                for (Index t = 0; t < len; ++t) value = value + X[t * ldx + a0 + a + r] * X[t * ldx + cc];
                out[(a + r) * ld_out + cc] = value;
            }
    }
    for (; a < na; ++a) {
        Index c = 0;
        for (; c + kOuterColumns <= nc; c += kOuterColumns) outer_sum_tile<1>(X, ldx, len, a0 + a, c, out + a * ld_out, ld_out);
        for (Index cc = c; cc < nc; ++cc) {
            double value = 0.0;
            for (Index t = 0; t < len; ++t) value = value + X[t * ldx + a0 + a] * X[t * ldx + cc];
            out[a * ld_out + cc] = value;
        }
    }
}

// ---------------------------------------------------------------- the variant's table
// Every entry is a kernel of this file except the two each variant writes in its own intrinsics
// (or plain C++): the single-query stream scan and the int8 scan.
constexpr KernelTable generic_kernels(const char* name, decltype(KernelTable::score_f32_stream) stream,
                                      decltype(KernelTable::score_int8) int8) {
    return {name, score_f32, stream, gram, pg_step, matvec_f64, read_sum, dot_f64, axpy_f64, cfs_update, mmr_update,
            score_bf16_generic, int8, score_f32_f64, temporal_blend, temporal_support, quadratic_forms_f64,
            outer_sum_f64};
}
