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
            std::push_heap(heap_.begin(), heap_.end(), ranks_before<Score>);
        } else if (capacity_ > 0 && ranks_before(item, heap_.front())) {
            std::pop_heap(heap_.begin(), heap_.end(), ranks_before<Score>);
            heap_.back() = item;
            std::push_heap(heap_.begin(), heap_.end(), ranks_before<Score>);
        }
    }

    // Worst kept score, for callers that skip work on items that cannot enter.
    bool full() const { return static_cast<Index>(heap_.size()) == capacity_; }
    Index capacity() const { return capacity_; }
    const ScoredId<Score>& worst() const { return heap_.front(); }

    // Best first. Leaves the selector empty.
    std::vector<ScoredId<Score>> take_sorted() {
        std::sort_heap(heap_.begin(), heap_.end(), ranks_before<Score>);
        return std::move(heap_);
    }

private:
    Index capacity_;
    std::vector<ScoredId<Score>> heap_;
};

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
