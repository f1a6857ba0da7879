// The signature state space of Chang & Collins (Sections 4.2-4.4) for LMs of any order, and the
// searches that walk it: the exact DP (Figure 2), the beam of Section 5.1 and the bounded exact
// search. A port of fstdecode/statespace/{signature,ngram}.py and fstdecode/search/
// {signature_dp,signature_beam,bounded}.py: the same states in the same order, so scores, tie
// order and the state and transition counts equal the Python engine's.
//
// Every search returns a Result (problem.h): status "" (hypotheses best first), "budget" (more
// than max_states states were built, exactly where the Python DP raises SearchLimitError; the
// bounded search then carries its beam's derivation and counts) or "none" (no derivation; the
// message is the Python engine's).
#pragma once

#include <string>

#include "problem.h"

namespace fstdecode {

// fstdecode.search.signature_dp.DpOptions (and BoundedOptions: the same fields), the source of
// truth for every default and check: only Python builds these (bind_signature.cpp takes every
// field), so no default is restated here.
struct SignatureDpOptions {
  int nbest;  // >= 1
  long max_states;  // < 0: no budget
  bool minimize;  // KenLM-style right-state minimisation (orders > 2)
};

// The beam's ranking estimate β (fstdecode.search.signature_beam.HEURISTICS).
enum class BeamHeuristic { Bound, UnigramDistortion, Unigram, None };

// fstdecode.search.signature_beam.BeamOptions, the source of truth for every default and check
// (bind_signature.cpp takes every field from it). The initialisers below are BeamOptions'
// defaults, kept because the core builds one itself: signature_bounded's lower-bound beam
// (bounded.py: BeamOptions(max_states=max_states)). Keep them in step with BeamOptions.
struct SignatureBeamOptions {
  int nbest = 1;
  long max_states = 2000000;  // < 0: no budget
  long long beam_size = 100;
  double beam_threshold = -1.0;  // < 0: off
  BeamHeuristic heuristic = BeamHeuristic::UnigramDistortion;
  bool minimize = true;
};

// The Python name of a heuristic ("bound", "unigram+distortion", "unigram", "none"), and back
// (throws std::invalid_argument for an unknown name).
const char* heuristic_name(BeamHeuristic heuristic);
BeamHeuristic heuristic_of(const std::string& name);

// signature_dp.search: the k best derivations, exactly (optimal = true).
Result signature_dp(const Problem& problem, const SignatureDpOptions& options);
// signature_beam.search: the beam, widened x4 (up to 1,000,000 states per j) while it finishes
// no derivation; states and transitions count every run (optimal = false).
Result signature_beam(const Problem& problem, const SignatureBeamOptions& options);
// bounded.search: the DP admitting only states whose upper bound reaches a default beam's score
// (bigram LMs, eta >= 0, nbest 1; otherwise signature_dp). Over budget: status "budget" with the
// beam's hypotheses, states and transitions (the SearchLimitError's `best`).
Result signature_bounded(const Problem& problem, const SignatureDpOptions& options);

}  // namespace fstdecode
