// The k best derivations of a search graph, extracted lazily (Huang & Chiang 2005, "Better k-best
// parsing", Algorithm 3, for a graph whose hyperedges have one tail, as the stack decoder's
// recombination arcs are): node v's j-th best derivation is found only when asked for, from its
// in-arcs' tails' derivations, so listing k derivations of the last node costs O(k) pops along
// each derivation's length, never a k-best list at every node.
//
// The graph: nodes 0 .. nodes - 1 (the stack decoder's recombination keys) and arcs (every push
// into a key, recombined or not). Arc a enters node head[a] from node tail[a] (-1: a start arc,
// its derivation alone) adding delta[a]; best[a] is its score by the tail's best derivation
// (tail's best score + delta[a], as the search summed it), so a node's first candidates need no
// look at its tails. A derivation's score is formed as the search formed it: its tail
// derivation's score + delta, in that order, bit for bit.
#pragma once

#include <cstddef>
#include <vector>

namespace fstdecode {

class LazyKBest {
 public:
  // One derivation of a node: its last arc, and the rank of the tail's derivation it extends
  // (-1 for a start arc).
  struct Derivation {
    double score;
    int arc;
    int rank;
  };

  // head, tail, delta, best: one entry per arc (see above). The graph must be acyclic.
  LazyKBest(int nodes, const std::vector<int>& head, std::vector<int> tail, std::vector<double> delta,
            std::vector<double> best);

  // Node v's j-th best derivation (0: the best), or nullptr when it has no more. Among equal
  // scores, the lower arc number first, then the lower rank. The pointer lives until the next call.
  const Derivation* get(int v, std::size_t j);

  // The arcs of node v's j-th derivation (get(v, j) must have returned one), first arc first.
  std::vector<int> arcs(int v, std::size_t j) const;

 private:
  struct Node {
    bool started = false;
    std::vector<Derivation> best;        // the derivations found, best first
    std::vector<Derivation> candidates;  // a heap by worse(): the next to pop on top
  };
  static bool worse(const Derivation& a, const Derivation& b);  // a ranks after b
  void start(int v);
  void push(Node& node, const Derivation& d);

  std::vector<int> tail_;
  std::vector<double> delta_, best_;
  std::vector<int> first_, arcs_;  // the in-arcs of node v: arcs_[first_[v] .. first_[v + 1])
  std::vector<Node> nodes_;
};

}  // namespace fstdecode
