// Problem (problem.h): the options of one sentence grouped by start, and the weighted LM
// scores of SearchProblem (fstdecode/problem/problem.py) over the problem's word ids.
#include "problem.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "hash.h"

namespace fstdecode {

Problem::Problem(const LanguageModel& lm, std::vector<WordId> lm_id, int n, int d, double eta,
                 double lm_weight, WordId bos, WordId eos)
    : lm_(lm), order_(search_order(lm)), lm_id_(std::move(lm_id)), n_(n), d_(d), eta_(eta), lm_weight_(lm_weight),
      bos_(bos), eos_(eos) {
  if (lm_.order() < 1) throw std::invalid_argument("the search needs an LM of order >= 1");
  if (n_ < 0) throw std::invalid_argument("n must be >= 0, got " + std::to_string(n_));
  if (d_ < 0) throw std::invalid_argument("d must be >= 0, got " + std::to_string(d_));
  const auto size = static_cast<WordId>(lm_id_.size());
  for (WordId id : lm_id_)
    if (id < 0 || static_cast<std::size_t>(id) >= lm_.vocab_size())
      throw std::invalid_argument("lm_id holds " + std::to_string(id) +
                                  ", not an id of the LM's vocabulary");
  if (bos_ < 0 || bos_ >= size || eos_ < 0 || eos_ >= size)
    throw std::invalid_argument("bos and eos must be problem ids (indices into lm_id)");
  bos_option_.s = bos_option_.t = 0;
  bos_option_.words = {bos_};
  eos_option_.s = eos_option_.t = end();
  eos_option_.words = {eos_};
  by_start_.assign(static_cast<std::size_t>(end()) + 1, {});
}

void Problem::add_option(Option option) {
  if (finished_) throw std::logic_error("Problem.add_option after finish()");
  if (!(1 <= option.s && option.s <= option.t && option.t <= n_))
    throw std::invalid_argument("option span [" + std::to_string(option.s) + ", " +
                                std::to_string(option.t) + "] is not within 1.." +
                                std::to_string(n_));
  if (option.words.empty()) throw std::invalid_argument("an option needs at least one word");
  for (WordId w : option.words)
    if (w < 0 || static_cast<std::size_t>(w) >= lm_id_.size())
      throw std::invalid_argument("option word " + std::to_string(w) +
                                  " is not a problem id (an index into lm_id)");
  option.id = option_count_++;
  by_start_[static_cast<std::size_t>(option.s)].push_back(std::move(option));
}

void Problem::finish() {
  if (finished_) throw std::logic_error("Problem.finish() called twice");
  finished_ = true;
  eos_option_.id = option_count_;
  by_start_[static_cast<std::size_t>(end())].push_back(eos_option_);
  by_id_.assign(static_cast<std::size_t>(option_count_) + 1, nullptr);
  for (const auto& opts : by_start_)
    for (const Option& o : opts) by_id_[static_cast<std::size_t>(o.id)] = &o;
}

void Problem::set_reordering(int kind, int back_width, int next_width, std::vector<double> back,
                             std::vector<double> next) {
  if (!finished_) throw std::logic_error("Problem.set_reordering before finish()");
  static const int kOrientations[] = {0, 3, 4, 2, 2};
  if (kind < LR_NONE || kind > LR_LEFTRIGHT) throw std::invalid_argument("unknown reordering kind " + std::to_string(kind));
  const int k = kOrientations[kind];
  if ((back_width != 0 && back_width != k) || (next_width != 0 && next_width != k))
    throw std::invalid_argument("set_reordering: a row has " + std::to_string(k) + " orientations or none");
  const std::size_t count = static_cast<std::size_t>(option_count_);
  if (back.size() != count * static_cast<std::size_t>(back_width) ||
      next.size() != count * static_cast<std::size_t>(next_width))
    throw std::invalid_argument("set_reordering: the rows do not match the " + std::to_string(option_count_) + " options");
  lr_kind_ = kind;
  lr_orientations_ = k;
  lr_back_width_ = back_width;
  lr_next_width_ = next_width;
  lr_back_ = std::move(back);
  lr_row_count_ = share_rows(next, next_width, count, lr_next_rows_, lr_row_);
  share_rows(lr_back_, back_width, count, lr_back_rows_, lr_back_row_);
}

// The distinct rows of `flat` (count rows of `width`) into `rows`, and each one's row id into
// `ids` (all 0 when width is 0); returns the number of distinct rows. Rows are compared with ==
// (std::map's < on doubles: -0.0 and 0.0 are one row, as in Python's tuples).
int Problem::share_rows(const std::vector<double>& flat, int width, std::size_t count, std::vector<double>& rows,
                        std::vector<int>& ids) {
  rows.clear();
  ids.assign(count, 0);
  if (width == 0) return 0;
  std::map<std::vector<double>, int> seen;
  const std::size_t w = static_cast<std::size_t>(width);
  int distinct = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> row(flat.begin() + static_cast<std::ptrdiff_t>(i * w), flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * w));
    const auto [it, fresh] = seen.emplace(row, distinct);
    if (fresh) {
      ++distinct;
      rows.insert(rows.end(), row.begin(), row.end());
    }
    ids[i] = it->second;
  }
  return distinct;
}

// lexical_reordering.py's first_orientation and orientation, on search positions (the tests
// compare spans only by differences, so the shift by one changes nothing; s == 1 is word 0).
int Problem::orientation(int prev_s, int prev_t, bool first, int s, int t) const {
  enum { M = 0, S = 1, NM = 1, D = 2, DL = 2, DR = 3, R = 0, L = 1 };
  if (lr_kind_ == LR_LEFTRIGHT) return first || prev_t <= s ? R : L;
  if (first) {
    if (s == 1) return M;
    return lr_kind_ == LR_MSD ? D : lr_kind_ == LR_MSLR ? DR : NM;
  }
  if (s == prev_t + 1) return M;
  if (lr_kind_ == LR_MONOTONICITY) return NM;
  if (prev_s == t + 1) return S;
  if (lr_kind_ == LR_MSD) return D;
  return s > prev_t ? DR : DL;
}

double Problem::reordering_score(int prev_s, int prev_t, int prev_row, const Option& opt) const {
  if (lr_kind_ == LR_NONE) return 0.0;
  const bool first = prev_row < 0;
  const int o = orientation(prev_s, prev_t, first, opt.s, opt.t);
  const double back = lr_back_width_ > 0 ? lr_back_[static_cast<std::size_t>(opt.id) * lr_back_width_ + o] : 0.0;
  if (first) return back;
  return back + (lr_next_width_ > 0 ? lr_next_rows_[static_cast<std::size_t>(prev_row) * lr_next_width_ + o] : 0.0);
}

void Problem::grow_cache() const {
  // A sentence of the full-size benchmark caches some 10^4-10^5 n-grams: start at 2^15 slots.
  const std::size_t cap = cache_.slots.empty() ? (std::size_t{1} << 15) : cache_.slots.size() * 2;
  std::vector<NgramCache::Slot> fresh(cap);
  for (const auto& slot : cache_.slots) {
    if (slot.id < 0) continue;
    std::size_t i = slot.hash & (cap - 1);
    while (fresh[i].id >= 0) i = (i + 1) & (cap - 1);
    fresh[i] = slot;
  }
  cache_.slots.swap(fresh);
}

std::uint64_t Problem::cache_hash(const WordId* context, int n, WordId w) {
  // One multiply a word, one finaliser at the end (a lookup compares the whole key, so the
  // hash only spreads the slots).
  std::uint64_t h = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(n)) << 32) | static_cast<std::uint32_t>(w);
  for (int i = 0; i < n; ++i) h = (h ^ static_cast<std::uint32_t>(context[i])) * 0x9e3779b97f4a7c15ULL;
  return mix(h);
}

const double* Problem::cached(const WordId* context, int n, WordId w, std::uint64_t h) const {
  if (cache_.slots.empty()) return nullptr;
  const std::size_t stride = static_cast<std::size_t>(order()) + 1;
  const std::size_t mask = cache_.slots.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const auto& slot = cache_.slots[i];
    if (slot.id < 0) return nullptr;
    if (slot.hash != h) continue;
    const WordId* key = cache_.keys.data() + static_cast<std::size_t>(slot.id) * stride;
    if (key[0] == n && key[1] == w && std::equal(context, context + n, key + 2))
      return &cache_.values[static_cast<std::size_t>(slot.id)];
  }
}

void Problem::prefetch_ngram(const WordId* context, int n, WordId w) const {
  const int k = order() - 1;
  if (n > k) {
    context += n - k;
    n = k;
  }
  if (cached(context, n, w, cache_hash(context, n, w)) != nullptr) return;
  constexpr int kMost = 16;  // a longer context is not worth a buffer: no hint
  if (n > kMost) return;
  WordId ids[kMost];
  for (int i = 0; i < n; ++i) ids[i] = lm_id_[static_cast<std::size_t>(context[i])];
  lm_.prefetch(ids, n, lm_id_[static_cast<std::size_t>(w)]);
}

double Problem::ngram(const WordId* context, int n, WordId w) const {
  // ArpaLM.logprob uses context[-(order - 1):] only, so the cache keys on those words.
  const int k = order() - 1;
  if (n > k) {
    context += n - k;
    n = k;
  }
  const std::uint64_t h = cache_hash(context, n, w);
  if (const double* v = cached(context, n, w, h)) return *v;
  const std::size_t stride = static_cast<std::size_t>(k) + 2;
  lm_buffer_.clear();
  for (int i = 0; i < n; ++i) lm_buffer_.push_back(lm_id_[static_cast<std::size_t>(context[i])]);
  const double v = lm_weight_ * lm_.logprob(lm_buffer_.data(), n, lm_id_[static_cast<std::size_t>(w)]);
  const auto id = static_cast<std::int32_t>(cache_.values.size());
  cache_.values.push_back(v);
  const std::size_t at = cache_.keys.size();
  cache_.keys.resize(at + stride, 0);
  cache_.keys[at] = n;
  cache_.keys[at + 1] = w;
  std::copy(context, context + n, cache_.keys.begin() + static_cast<std::ptrdiff_t>(at + 2));
  if (2 * cache_.values.size() > cache_.slots.size()) grow_cache();
  const std::size_t mask = cache_.slots.size() - 1;
  std::size_t i = h & mask;
  while (cache_.slots[i].id >= 0) i = (i + 1) & mask;
  cache_.slots[i] = {h, id};
  return v;
}

double Problem::backoff(const WordId* context, int n) const {
  // ArpaLM.backoff looks the whole context up (a context longer than order - 1 has none).
  lm_buffer_.clear();
  for (int i = 0; i < n; ++i) lm_buffer_.push_back(lm_id_[static_cast<std::size_t>(context[i])]);
  return lm_weight_ * lm_.backoff(lm_buffer_.data(), n);
}

bool Problem::extends(const WordId* context, int n) const {
  lm_buffer_.clear();
  for (int i = 0; i < n; ++i) lm_buffer_.push_back(lm_id_[static_cast<std::size_t>(context[i])]);
  return lm_.extends(lm_buffer_.data(), n);
}

int Problem::trim(const WordId* context, int n, double* backoffs) const {
  lm_buffer_.clear();
  for (int i = 0; i < n; ++i) lm_buffer_.push_back(lm_id_[static_cast<std::size_t>(context[i])]);
  const int d = lm_.trim(lm_buffer_.data(), n, backoffs);
  for (int i = 0; i < d; ++i) backoffs[i] = lm_weight_ * backoffs[i];  // as backoff() weights
  return d;
}

void Problem::facts(const WordId* context, int n, double* out) const {
  WordId small[kSmallContext];
  lm_.facts(to_lm(context, n, small), n, out);
}

double Problem::ngram_facts(const WordId* context, int n, WordId w, const double* facts, const NextFacts* next) const {
  WordId small[kSmallContext];
  return lm_weight_ * lm_.logprob_facts(to_lm(context, n, small), n, lm_id_[static_cast<std::size_t>(w)], facts, next);
}

void Problem::prefetch_facts(const WordId* context, int n, WordId w) const {
  if (n > kSmallContext) return;  // not worth a buffer: no hint
  WordId small[kSmallContext];
  lm_.prefetch_facts(to_lm(context, n, small), n, lm_id_[static_cast<std::size_t>(w)]);
}

void Problem::prefetch_trim(const WordId* context, int n) const {
  constexpr int kMost = 16;  // a longer context is not worth a buffer: no hint
  if (n > kMost) return;
  WordId ids[kMost];
  for (int i = 0; i < n; ++i) ids[i] = lm_id_[static_cast<std::size_t>(context[i])];
  lm_.prefetch_trim(ids, n);
}

}  // namespace fstdecode
