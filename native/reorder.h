// The reordering automaton R of the WFST cascade and its LM transducer L, built natively: a port
// of fstdecode/fst/reorder.py (build_reordering) and fstdecode/fst/lm_fst.py (build_lm_fst).
// Both are written as OpenFst binary ConstFsts (standard arcs, arcs sorted by input label), which
// pywrapfst reads in bulk; composition and shortest path stay in OpenFst.
//
// R's states are the signature states reachable from the start (statespace.h), numbered in the
// order Python creates them; one arc per transition ψ1 p ψ2 (each state's arcs in Python's order,
// then stably sorted by input label): input P's label
// of the option, output the label of its operation symbol, weight eta × jumps, less the
// transition's weighted lexicalized reordering charge with a reordering model (the states then
// carry their tapes' LR ends, statespace.h, and the symbols end with "|lr:O1,O2=V"). Operation labels
// are numbered in order of first sight of their symbol text, as pywrapfst's SymbolTable numbers
// them, so that R is the Python engine's machine arc for arc (up to the order of arcs with equal
// input labels, which OpenFst's arcsort leaves unspecified).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "problem.h"

namespace fstdecode {

// fstdecode.fst.reorder.build_reordering_native's arguments, the source of truth for their
// defaults: only Python builds these (bind_reorder.cpp takes every field).
struct ReorderOptions {
  long max_states;  // < 0: no budget
  bool minimize;  // KenLM-style right-state minimisation (orders > 2)
  // Finite: keep only what can lie on a derivation scoring at least this (issue 12's pruned R):
  // a transition is dropped when the best score of a path to its source, plus its own score,
  // plus an upper bound on every completion of its target (exact.h: the best covers of the
  // positions left, each open tape's first words at their best, the </s> bound; with a
  // reordering model, the charges still to come at their best), is below it.
  double threshold;  // -inf: keep everything
};

struct Reordering {
  std::string fst;      // R (no symbol tables)
  std::string lm_fst;   // L: one state, one arc label:label per operation
  std::string symbols;  // R's output symbols by label, each ended by a newline (<eps> first)
  long states = 0, transitions = 0;
  std::string status;  // "": built; "budget": more than max_states states (nothing else is set)
  std::string message;
  // Per output label (entry 0, ε, unused): the option's index (Option::index, -1 for </s>),
  // the starts of ψ1 and ψ2 (search positions, -1 for φ), the distortion distance, and the LM
  // cost −λ_lm Σ ln p of its events in double precision (L's arc weight, before rounding).
  std::vector<int> option, s1, s2, jumps;
  std::vector<double> lm_cost;
  // With a reordering model, per output label (entry 0 too, 0.0): the weighted reordering
  // score its arcs charge (R's arc weight is eta × jumps − lr); empty without one.
  std::vector<double> lr;
  // With a threshold: the best score of a path through R (−inf if none reaches the threshold).
  double best = -std::numeric_limits<double>::infinity();
};

// R and L of one sentence. `vocab` holds the words of the problem's ids and `input_labels` P's
// label of each option (by Option::index).
Reordering build_reordering(const Problem& problem, const std::vector<std::string>& vocab,
                            const std::vector<int>& input_labels, const ReorderOptions& options);

}  // namespace fstdecode
