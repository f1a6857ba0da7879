// Moses' n-best lists in Moses' own float arithmetic: each entry's feature values and total as
// Moses computes them (every value a C float, summed hypothesis by hypothesis, a path through
// lost recombinations scored as TrellisPath does), and the n-best line itself, written here.
//
// The rules, with the Moses source each follows, are those of the Python oracle that checks this
// file, fstdecode/reference/moses_float.py (its module docstring): per hypothesis a delta of the
// translation option's own scores plus each stateful feature's (KENLM in KenLM's float log10
// values, Distortion, LexicalReordering); the total of a hypothesis the float inner product of
// its delta with the weights, plus the future-cost estimate of what is left uncovered, plus the
// previous hypothesis' score; a path through arcs (a hypothesis that lost its key's
// recombination) the last winner's breakdown with each arc's winner's chain taken off and the
// arc's own put on, last phrase first.
//
// Invariants: a MosesScoring is made once per model and weights (fstdecode/search/moses_nbest.py
// builds it from the model's dataclasses); a Problem's MosesValues (problem.h) are set before
// moses_nbest reads them. Nothing here allocates Python objects.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "problem.h"

namespace fstdecode {

// The kind of a dense feature component (fstdecode.model.features.MOSES_KINDS' field names).
enum MosesKind { MK_LM = 0, MK_TM = 1, MK_DISTORTION = 2, MK_WORD = 3, MK_PHRASE = 4, MK_UNKNOWN = 5, MK_LR = 6 };

// The model's dense features as Moses registers them, and how its n-best lines print them.
struct MosesScoring {
  // One entry per dense component, in Moses' order (the features in moses_layout order, each
  // feature's components in order): its kind, its place within the kind (tm's k, lr's k; 0
  // otherwise), and its weight as a float.
  std::vector<int> kind;
  std::vector<int> component;
  std::vector<float> weight;
  bool early_distortion = false;
  // An unknown word's UnknownWordPenalty value per source word (UNKNOWN_WORD_VALUE).
  double unknown_value = -100.0;
  // Lexicalized reordering, by orientation o: the lr component the backward (forward) score adds
  // to, and the column of the option's row it reads; -1 where the model has no such direction.
  std::vector<int> lr_back_component, lr_back_column, lr_forward_component, lr_forward_column;
  int lr_components = 0;
  // The printed features (Moses' OutputAllFeatureScores: tuneable ones): name, and the entries
  // of the dense list above it prints, in order.
  std::vector<std::string> names;
  std::vector<std::vector<int>> printed;

  // Throws std::invalid_argument when the lists disagree in length or name entries that do not exist.
  void check() const;
};

// How the lines are written (fstdecode.search.moses_nbest.NbestFormat).
struct NbestFormat {
  bool labeled = true;        // " Name=" before each feature's values
  bool segmentation = false;  // " ||| 0-1=0-1 ..." (-include-segmentation-in-n-best)
  bool alignment = false;     // " ||| 0-0 1-1 " (-print-alignment-info-in-n-best)
  bool mark_unknown = false;  // "UNK" before an unknown word (-mark-unknown)
};

// One n-best entry in Moses' arithmetic: its breakdown (one float per dense component) and total.
struct MosesEntry {
  std::vector<float> values;
  float total = 0.0f;
};

// The breakdown and total of each of result's hypotheses (their winners as the stack decoder
// reports them with an n-best list; without winners, each hypothesis' own chain), in result's order.
std::vector<MosesEntry> moses_entries(const Problem& problem, const Result& result, const MosesScoring& scoring);

// An entry's feature field as n-best lines print it: " Name= v v" for each printed feature (the
// label only when labeled), each value moses_number.
std::string moses_features(const MosesEntry& entry, const MosesScoring& scoring, bool labeled);

// The n-best lines of result (problem's MosesValues set, with words and, for format.alignment,
// alignments): one per hypothesis, in the order of their float totals, best first (a stable sort:
// equal totals keep the search's order), each "id ||| words  ||| features ||| total[...]\n".
// With `fields`, also each hypothesis' feature field and total, in result's order (the server's fvals).
using MosesFields = std::pair<std::string, float>;
std::string moses_nbest(const Problem& problem, const Result& result, const MosesScoring& scoring, long id,
                        const NbestFormat& format, std::vector<MosesFields>* fields = nullptr);

// Setting a problem's MosesValues (after finish(); each checks its lengths against the problem
// and throws std::invalid_argument): the options' phrase-table scores (natural logs, id * num_tm
// + k; each becomes moses_table_value) and unknown-word flags, by option id; the text of each
// problem word id; the reordering rows (id * width + c; kinds[id] 0: no row, 1: the table's
// natural logs (moses_table_value), 2: default-scores, taken as they are); the options' word
// alignments (offsets by id into points, as MosesValues holds them).
void set_moses_scores(Problem& problem, int num_tm, const std::vector<double>& ln_scores,
                      std::vector<unsigned char> unknown);
void set_moses_words(Problem& problem, std::vector<std::string> words);
void set_moses_reordering(Problem& problem, int width, const std::vector<double>& values,
                          const std::vector<int>& kinds);
void set_moses_alignment(Problem& problem, std::vector<int> offsets, std::vector<int> points);

// A phrase-table (or reordering-table) probability as Moses holds it, from its natural log:
// read as a float, its log rounded to float and floored at -100 (TransformScore, FloorScore).
float moses_table_value(double ln_score);

// A score as Moses' ostream prints it: 6 significant digits, "0" for a zero of either sign.
std::string moses_number(double x);

}  // namespace fstdecode
