// The stack decoder of Pharaoh/Moses with Moore & Quirk's improvements: a line-by-line port of
// fstdecode/search/stack.py (same states, recombination keys, pruning, anchors, early pruning and
// tie order), so that both engines return the same derivations and the same state counts; with
// the problem's lexicalized reordering and distortion semantics (Problem::set_reordering,
// set_semantics) as stack.py has them.
#pragma once

#include "problem.h"

namespace fstdecode {

// fstdecode.search.stack.StackOptions, the source of truth for every default and check: only
// Python builds these (bind_stack.cpp takes every field), so no default is restated here.
struct StackOptions {
  int nbest;  // >= 1: the derivations listed (a plain list), or searched for (a distinct one)
  // > 0: list the best derivation of each of the first `distinct` translations (target words)
  // among the nbest best derivations, skipping repeats as they come; 0: a plain list.
  int distinct;
  long max_states;  // < 0: no budget
  int beam_size;  // >= 1
  double beam_threshold;  // < 0: off
  bool distortion_estimate;
  bool early_pruning;
  double early_threshold;  // < 0: beam_threshold, else ln 1e5
  // nbest > 1 and beam_threshold >= 0: a push that loses its key's recombination is no arc (no
  // derivation goes through it) when its estimate is below the best estimate its stack had so
  // far minus beam_threshold, as Moses discards a hypothesis below its stack's worst score.
  bool moses_nbest;
  // > 0: cube pruning (Moses' -search-algorithm 1, Chiang 2007; Huang & Chiang 2007), at most this
  // many hypotheses popped into each stack (-cube-pruning-pop-limit); 0: the normal search.
  int cube_pop_limit;
};

Result stack_search(const Problem& problem, const StackOptions& options);

}  // namespace fstdecode
