// Top-k selection under the tie rule shared by every operator: higher score first, equal
// scores -> lower id first.
#pragma once

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "types.hpp"

namespace fieldrank {

template <typename Score>
struct ScoredId {
    Score score;
    Index id;
};

template <typename Score>
inline bool ranks_before(const ScoredId<Score>& a, const ScoredId<Score>& b) {
    return a.score > b.score || (a.score == b.score && a.id < b.id);
}

// ranks_before as a function object, so the standard algorithms inline the comparison.
struct RanksBefore {
    template <typename Score>
    bool operator()(const ScoredId<Score>& a, const ScoredId<Score>& b) const {
        return ranks_before(a, b);
    }
};

// Keeps the best `capacity` items seen so far. Items go into a buffer of up to 2·capacity;
// when it fills, nth_element keeps the best `capacity` and the worst of those becomes the
// threshold an item must beat to enter. A rejected item costs one comparison and an accepted
// one amortised O(1) (a heap costs O(log capacity) per accepted item). The items kept are the
// best `capacity` by the total order (score, then id), however they arrive.
template <typename Score>
class TopK {
public:
    explicit TopK(Index capacity) : capacity_(std::max<Index>(capacity, 0)) {
        items_.reserve(static_cast<std::size_t>(std::min<Index>(capacity_, Index{1} << 20) * 2));
    }

    void push(Score score, Index id) {
        if (capacity_ == 0) return;
        const ScoredId<Score> item{score, id};
        if (has_threshold_ && !ranks_before(item, threshold_)) return;
        items_.push_back(item);
        if (static_cast<Index>(items_.size()) - capacity_ >= capacity_) compact();  // 2·capacity, no overflow
    }

    // Once full(), an item that does not rank before worst() cannot enter (callers skip work on it).
    bool full() const { return has_threshold_; }
    Index capacity() const { return capacity_; }
    const ScoredId<Score>& worst() const { return threshold_; }

    // Best first. Leaves the selector empty.
    std::vector<ScoredId<Score>> take_sorted() {
        if (static_cast<Index>(items_.size()) > capacity_) compact();
        std::sort(items_.begin(), items_.end(), RanksBefore{});
        has_threshold_ = false;
        return std::move(items_);
    }

private:
    void compact() {
        const auto keep = static_cast<std::ptrdiff_t>(capacity_);
        std::nth_element(items_.begin(), items_.begin() + keep - 1, items_.end(), RanksBefore{});
        threshold_ = items_[static_cast<std::size_t>(keep - 1)];
        items_.resize(static_cast<std::size_t>(keep));
        has_threshold_ = true;
    }

    Index capacity_;
    std::vector<ScoredId<Score>> items_;
    ScoredId<Score> threshold_{};
    bool has_threshold_ = false;
};

// The best `capacity` items best first, by the same total order as TopK (same result).
template <typename Score>
std::vector<ScoredId<Score>> select_sorted(std::vector<ScoredId<Score>>&& items, Index capacity) {
    const auto keep = static_cast<std::size_t>(std::min<Index>(capacity, static_cast<Index>(items.size())));
    if (keep < items.size()) {
        std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(keep), items.end(),
                         RanksBefore{});
        items.resize(keep);
    }
    std::sort(items.begin(), items.end(), RanksBefore{});
    return std::move(items);
}

// Positions 0..n-1 of `scores` ordered by the tie rule on (scores[i], ids[i]), keeping the best `limit`.
template <typename ScoreVector>
std::vector<Index> rank_positions(const ScoreVector& scores, const IdVector& ids, Index limit) {
    std::vector<Index> order(static_cast<std::size_t>(scores.size()));
    std::iota(order.begin(), order.end(), Index{0});
    auto before = [&](Index a, Index b) {
        return scores[a] > scores[b] || (scores[a] == scores[b] && ids[a] < ids[b]);
    };
    limit = std::min<Index>(limit, static_cast<Index>(order.size()));
    std::partial_sort(order.begin(), order.begin() + limit, order.end(), before);
    order.resize(static_cast<std::size_t>(limit));
    return order;
}

// Items best first (TopK::take_sorted) as a result with `ids` and `scores` vectors: Ranking
// (float scores) or FusedRanking (double).
template <typename Result, typename Score>
inline Result ranking_of(const std::vector<ScoredId<Score>>& items) {
    Result result;
    result.ids.resize(static_cast<Index>(items.size()));
    result.scores.resize(static_cast<Index>(items.size()));
    for (std::size_t i = 0; i < items.size(); ++i) {
        result.ids[static_cast<Index>(i)] = items[i].id;
        result.scores[static_cast<Index>(i)] = items[i].score;
    }
    return result;
}

}  // namespace fieldrank
