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

// Keeps the best `capacity` items seen so far. The heap's front is the worst kept item, so
// a new item costs one comparison unless it enters.
template <typename Score>
class TopK {
public:
    explicit TopK(Index capacity) : capacity_(capacity) { heap_.reserve(static_cast<std::size_t>(capacity)); }

    void push(Score score, Index id) {
        const ScoredId<Score> item{score, id};
        if (static_cast<Index>(heap_.size()) < capacity_) {
            heap_.push_back(item);
            std::push_heap(heap_.begin(), heap_.end(), RanksBefore{});
        } else if (capacity_ > 0 && ranks_before(item, heap_.front())) {
            std::pop_heap(heap_.begin(), heap_.end(), RanksBefore{});
            heap_.back() = item;
            std::push_heap(heap_.begin(), heap_.end(), RanksBefore{});
        }
    }

    // Worst kept score, for callers that skip work on items that cannot enter.
    bool full() const { return static_cast<Index>(heap_.size()) == capacity_; }
    Index capacity() const { return capacity_; }
    const ScoredId<Score>& worst() const { return heap_.front(); }

    // Best first. Leaves the selector empty.
    std::vector<ScoredId<Score>> take_sorted() {
        std::sort_heap(heap_.begin(), heap_.end(), RanksBefore{});
        return std::move(heap_);
    }

private:
    Index capacity_;
    std::vector<ScoredId<Score>> heap_;
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

}  // namespace fieldrank
