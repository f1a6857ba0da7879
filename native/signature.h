// The signature state space of Chang & Collins (Sections 4.2-4.4) for LMs of any order, and the
// searches that walk it: the exact DP (Figure 2), the beam of Section 5.1 and the bounded exact
// search. A port of fstdecode/statespace/{signature,ngram}.py and fstdecode/search/
// {signature_dp,signature_beam,bounded}.py: the same states in the same order, so state and
// transition counts equal the Python engine's.
#pragma once

#include "problem.h"

namespace fstdecode {

struct DpOptions {
  int nbest = 1;
  long max_states = 200000;
  bool minimize = true;
};

struct BeamOptions {
  int nbest = 1;
  long max_states = 2000000;
  int beam_size = 100;
  double beam_threshold = -1.0;  // < 0: off
  std::string heuristic = "unigram+distortion";
  bool minimize = true;
};

Result signature_dp(const Problem& problem, const DpOptions& options);
Result signature_beam(const Problem& problem, const BeamOptions& options);
Result bounded_search(const Problem& problem, const DpOptions& options);

}  // namespace fstdecode
