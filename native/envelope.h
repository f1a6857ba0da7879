// The upper envelopes of MERT's line search (fstdecode/tune/mert.py): along p + γd each n-best
// entry's model score is a line a + γb, and a sentence picks the top line at each γ.
//
// For each sentence (entries [offsets[s], offsets[s + 1])), upper_envelopes finds the top line
// as γ goes from -inf to +inf: the first is the least slope's highest line (the first entry of
// equals), then each breakpoint x where a steeper line takes over, with the entries before and
// after it. A line of a slope met already, and one that is on top at a single point only, never
// appears. Sentences without entries are skipped. O(n log n) per sentence (the sort).
#pragma once

#include <cstdint>
#include <vector>

namespace fstdecode {

struct Envelopes {
  std::vector<std::int64_t> first;  // per non-empty sentence: the entry on top at -inf
  std::vector<double> x;            // breakpoints, sentence by sentence, increasing within one
  std::vector<std::int64_t> from, to;
};

Envelopes upper_envelopes(const double* a, const double* b, const std::int64_t* offsets, std::size_t sentences);

}  // namespace fstdecode
