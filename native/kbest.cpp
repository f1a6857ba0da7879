// The lazy k-best extraction (kbest.h).
#include "kbest.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace fstdecode {

LazyKBest::LazyKBest(int nodes, const std::vector<int>& head, std::vector<int> tail, std::vector<double> delta,
                     std::vector<double> best)
    : tail_(std::move(tail)), delta_(std::move(delta)), best_(std::move(best)), nodes_(static_cast<std::size_t>(nodes)) {
  const std::size_t count = head.size();
  if (tail_.size() != count || delta_.size() != count || best_.size() != count || nodes < 0)
    throw std::invalid_argument("LazyKBest: head, tail, delta and best differ in length");
  // The in-arcs of each node, by a counting sort that keeps the arcs' order.
  first_.assign(static_cast<std::size_t>(nodes) + 1, 0);
  for (int v : head) {
    if (v < 0 || v >= nodes) throw std::invalid_argument("LazyKBest: an arc's head is not a node");
    ++first_[static_cast<std::size_t>(v) + 1];
  }
  for (std::size_t v = 0; v < static_cast<std::size_t>(nodes); ++v) first_[v + 1] += first_[v];
  arcs_.resize(count);
  std::vector<int> at(first_.begin(), first_.end() - 1);
  for (std::size_t a = 0; a < count; ++a) arcs_[static_cast<std::size_t>(at[static_cast<std::size_t>(head[a])]++)] = static_cast<int>(a);
}

bool LazyKBest::worse(const Derivation& a, const Derivation& b) {
  if (a.score != b.score) return a.score < b.score;
  if (a.arc != b.arc) return a.arc > b.arc;
  return a.rank > b.rank;
}

void LazyKBest::push(Node& node, const Derivation& d) {
  node.candidates.push_back(d);
  std::push_heap(node.candidates.begin(), node.candidates.end(), worse);
}

// A node's first candidates: each in-arc by its tail's best derivation (rank 0), or alone.
void LazyKBest::start(int v) {
  Node& node = nodes_[static_cast<std::size_t>(v)];
  node.started = true;
  const int begin = first_[static_cast<std::size_t>(v)], end = first_[static_cast<std::size_t>(v) + 1];
  node.candidates.reserve(static_cast<std::size_t>(end - begin));
  for (int i = begin; i < end; ++i) {
    const int a = arcs_[static_cast<std::size_t>(i)];
    node.candidates.push_back({best_[static_cast<std::size_t>(a)], a, tail_[static_cast<std::size_t>(a)] < 0 ? -1 : 0});
  }
  std::make_heap(node.candidates.begin(), node.candidates.end(), worse);
}

const LazyKBest::Derivation* LazyKBest::get(int v, std::size_t j) {
  if (v < 0 || static_cast<std::size_t>(v) >= nodes_.size()) return nullptr;
  if (!nodes_[static_cast<std::size_t>(v)].started) start(v);
  while (nodes_[static_cast<std::size_t>(v)].best.size() <= j) {
    Node& node = nodes_[static_cast<std::size_t>(v)];
    if (node.candidates.empty()) return nullptr;
    std::pop_heap(node.candidates.begin(), node.candidates.end(), worse);
    const Derivation d = node.candidates.back();
    node.candidates.pop_back();
    node.best.push_back(d);
    if (d.rank < 0) continue;
    // Its successor: the same arc by the tail's next derivation (found now, recursively; the
    // graph is acyclic, so the recursion never comes back to v).
    const int tail = tail_[static_cast<std::size_t>(d.arc)];
    const Derivation* next = get(tail, static_cast<std::size_t>(d.rank) + 1);
    if (next != nullptr)
      push(nodes_[static_cast<std::size_t>(v)], {next->score + delta_[static_cast<std::size_t>(d.arc)], d.arc, d.rank + 1});
  }
  return &nodes_[static_cast<std::size_t>(v)].best[j];
}

std::vector<int> LazyKBest::arcs(int v, std::size_t j) const {
  std::vector<int> out;
  for (;;) {
    const Derivation& d = nodes_[static_cast<std::size_t>(v)].best.at(j);
    out.push_back(d.arc);
    if (d.rank < 0) break;
    v = tail_[static_cast<std::size_t>(d.arc)];
    j = static_cast<std::size_t>(d.rank);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace fstdecode
