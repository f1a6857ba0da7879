// The exact coverage-vector DP (Koehn et al. 2003 without pruning): a port of
// fstdecode/search/coverage_dp.py. States are (coverage, last end position, LM context, and with
// lexicalized reordering the last phrase's reordering state: Problem::set_reordering), the
// context minimised as fstdecode.statespace.ngram.join does for the one <s> tape; each state
// keeps its k best hypotheses (search/kbest.py's insert_best). The same states are built in the
// same order, so `states`, `transitions`, scores and tie order equal the Python engine's.
#pragma once

#include "problem.h"

namespace fstdecode {

// fstdecode.search.coverage_dp.CoverageOptions, the source of truth for every default and check:
// only Python builds these (bind_coverage.cpp takes every field), so no default is restated here.
struct CoverageOptions {
  int nbest;  // >= 1
  long max_states;  // < 0: no budget
  bool minimize;
};

// The k best derivations (optimal = true). status "budget" when more than max_states states
// would be built (no hypotheses then, as Python raises before any derivation is complete),
// "none" when no derivation satisfies the distortion limit. A sentence of more than 512 words
// (WinCov) also ends with "budget" when a coverage reaches beyond the window.
Result coverage_search(const Problem& problem, const CoverageOptions& options);

}  // namespace fstdecode
