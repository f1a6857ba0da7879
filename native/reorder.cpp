// build_reordering (reorder.h): R's states and arcs walked with the signature state space, its
// operation symbols interned, and R and L written in OpenFst's binary format.
#include "reorder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exact.h"
#include "statespace.h"

namespace fstdecode {
namespace {

using namespace space;  // Sig, Ends, Space, Successors, Event, PHI

// ---------------------------------------------------------------------------------------------
// OpenFst's binary ConstFst (fst/const-fst.h, version 2, unaligned; fst/fst.h FstHeader): the
// header, then every state's record, then every arc, each array read by OpenFst in one go.

constexpr std::int32_t FST_MAGIC = 2125659606;
constexpr std::int32_t CONST_VERSION = 2;
constexpr std::uint64_t EXPANDED = 0x1;
constexpr std::uint64_t ILABEL_SORTED = 0x10000000;

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<std::int32_t>(out, static_cast<std::int32_t>(s.size()));
  out += s;
}

struct Arc {
  std::int32_t ilabel, olabel;
  float weight;
  std::int32_t nextstate;
};

struct ConstState {  // ConstFst<StdArc, uint32>'s state record
  float final_weight;
  std::uint32_t pos, narcs, niepsilons, noepsilons;
};

// A tropical ConstFst whose state q has the arcs arcs[first[q] .. first[q] + count[q]) (sorted
// here by input label, stably: the machine is ilabel-sorted, as composition wants it, and says
// so). final_state (if >= 0) has weight 0.
std::string const_fst(long num_states, long start, long final_state, std::vector<Arc>& arcs,
                      const std::vector<std::uint32_t>& first, const std::vector<std::uint32_t>& count) {
  std::string out;
  put(out, FST_MAGIC);
  put_string(out, "const");
  put_string(out, "standard");
  put<std::int32_t>(out, CONST_VERSION);
  put<std::int32_t>(out, 0);  // flags: no symbol tables, not aligned
  put<std::uint64_t>(out, EXPANDED | ILABEL_SORTED);
  put<std::int64_t>(out, start);
  put<std::int64_t>(out, num_states);
  put<std::int64_t>(out, static_cast<std::int64_t>(arcs.size()));
  const std::size_t header = out.size();
  const std::size_t n = static_cast<std::size_t>(num_states);
  out.resize(header + n * sizeof(ConstState) + arcs.size() * sizeof(Arc));
  char* state_at = out.data() + header;
  char* arc_at = state_at + n * sizeof(ConstState);
  std::uint32_t pos = 0;
  for (std::size_t q = 0; q < n; ++q) {
    Arc* from = arcs.data() + first[q];
    Arc* to = from + count[q];
    std::stable_sort(from, to, [](const Arc& x, const Arc& y) { return x.ilabel < y.ilabel; });
    const float final_weight = static_cast<long>(q) == final_state ? 0.0f : std::numeric_limits<float>::infinity();
    ConstState st{final_weight, pos, count[q], 0, 0};
    for (const Arc* arc = from; arc != to; ++arc) {
      st.niepsilons += arc->ilabel == 0;
      st.noepsilons += arc->olabel == 0;
    }
    std::memcpy(state_at + q * sizeof(ConstState), &st, sizeof(ConstState));
    std::memcpy(arc_at + static_cast<std::size_t>(pos) * sizeof(Arc), from, count[q] * sizeof(Arc));
    pos += count[q];
  }
  return out;
}
static_assert(sizeof(ConstState) == 20, "ConstFst's state record is 20 bytes");
static_assert(sizeof(Arc) == 16, "OpenFst's StdArc is 16 bytes: ilabel, olabel, weight, nextstate");

// ---------------------------------------------------------------------------------------------
// The states of one layer in order of creation, found by their signatures (and, with lexicalized
// reordering, their tapes' LR ends: `ends` is then non-null, else null).

class Layer {
 public:
  // The state (j, key[0..r), ends[0..r)) with hash h: its number, or -1.
  int find(std::uint64_t h, const Sig* key, const Ends* ends, int r) const {
    const int x = index_.find(h, [&](int i) {
      return r_[static_cast<std::size_t>(i)] == r && std::equal(key, key + r, sigs(i)) &&
             (ends == nullptr || std::equal(ends, ends + r, this->ends(i)));
    });
    return x < 0 ? -1 : id_[static_cast<std::size_t>(x)];
  }
  void add(std::uint64_t h, const Sig* key, const Ends* ends, int r, int id) {
    offset_.push_back(sigs_.size());
    r_.push_back(r);
    id_.push_back(id);
    sigs_.insert(sigs_.end(), key, key + r);
    if (ends) ends_.insert(ends_.end(), ends, ends + r);
    index_.insert(h, static_cast<int>(id_.size()) - 1);
  }
  int size() const { return static_cast<int>(id_.size()); }
  int id(int x) const { return id_[static_cast<std::size_t>(x)]; }
  int r(int x) const { return r_[static_cast<std::size_t>(x)]; }
  const Sig* sigs(int x) const { return sigs_.data() + offset_[static_cast<std::size_t>(x)]; }
  const Ends* ends(int x) const { return ends_.data() + offset_[static_cast<std::size_t>(x)]; }

 private:
  std::vector<Sig> sigs_;
  std::vector<Ends> ends_;  // with lexicalized reordering: the tapes' LR ends, as sigs_
  std::vector<std::size_t> offset_;
  std::vector<int> r_, id_;
  Index index_;
};

std::uint64_t state_hash(const Sig* sigs, const Ends* ends, int r) {
  std::uint64_t h = 0;
  for (int k = 0; k < r; ++k) h += tape_hash(sigs[k], ends ? &ends[k] : nullptr);
  return h;
}

// Python's repr of a double (the shortest text that reads back as it; positional when the
// decimal point falls within -4 < decpt <= 16, else with an exponent of at least two digits),
// as reorder.py writes a reordering charge into an operation symbol.
std::string python_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  const auto got = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string sci(buf, got.ptr);  // [-]d[.ddd]e±xx, shortest round trip
  std::string out = sci[0] == '-' ? "-" : "";
  const std::size_t from = out.size(), e = sci.find('e');
  std::string digits;
  for (std::size_t i = from; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int decpt = std::stoi(sci.substr(e + 1)) + 1;
  const int nd = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (nd > 1) out += "." + digits.substr(1);
    const int exp = decpt - 1;
    out += exp < 0 ? "e-" : "e+";
    const std::string mag = std::to_string(exp < 0 ? -exp : exp);
    out += (mag.size() < 2 ? "0" : "") + mag;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  } else if (decpt >= nd) {
    out += digits + std::string(static_cast<std::size_t>(decpt - nd), '0') + ".0";
  } else {
    out += digits.substr(0, static_cast<std::size_t>(decpt)) + "." + digits.substr(static_cast<std::size_t>(decpt));
  }
  return out;
}

// lexical_reordering.ORIENTATION_NAMES, by Problem::reordering_kind and orientation.
const char* orientation_name(int kind, int o) {
  static const char* const names[][4] = {
      {"", "", "", ""},
      {"monotone", "swap", "discontinuous", ""},
      {"monotone", "swap", "discontinuous-left", "discontinuous-right"},
      {"monotone", "non-monotone", "", ""},
      {"right", "left", "", ""},
  };
  return o == PHI ? "_" : names[kind][o];
}

// ---------------------------------------------------------------------------------------------
// Operation symbols (reorder.py's _Builder): one label per distinct symbol text. The text is a
// one-to-one function of (option, s1, t1, s2, junction events) (an option fixes its span, P's
// label, its target and the n-grams inside it), so labels are found by those ids, and each new
// label's text is written once, into out.symbols.

class Operations {
 public:
  Operations(const Problem& problem, Space& space, const std::vector<std::string>& vocab,
             const std::vector<int>& input_labels, Reordering& out)
      : p_(problem), sp_(space), vocab_(vocab), input_labels_(input_labels), out_(out) {
    out_.symbols = "<eps>\n";
    out_.option.push_back(-1);
    out_.s1.push_back(PHI);
    out_.s2.push_back(PHI);
    out_.jumps.push_back(0);
    out_.lm_cost.push_back(0.0);
    if (p_.has_reordering()) out_.lr.push_back(0.0);
  }

  // The number of labels, ε included.
  std::size_t size() const { return out_.option.size(); }

  int input_label(const Option& opt) const {
    return opt.index < 0 ? 0 : input_labels_.at(static_cast<std::size_t>(opt.index));
  }

  // The labels of appending each of a group's options (opts[0 .. count)) to tape a (ψ1) and
  // prepending it to tape c (ψ2), cached on what their symbols spell: the group, ψ1's start, end
  // and words (for order 2 only its last word), ψ2's start and words (for order 2 only its first
  // word; never its end), and with lexicalized reordering ψ1's tail and ψ2's head (ea and ec,
  // their LR ends; null without a reordering model). Returns the first of `count` labels
  // (label_at).
  std::size_t labels(int j, const Opt* opts, int count, const Sig* a, const Ends* ea, const Sig* c, const Ends* ec) {
    const Sig none = make_sig(PHI, PHI, PHI, PHI);
    const Sig& x = a ? *a : none;
    const Sig& y = c ? *c : none;
    const bool bigram = p_.order() == 2;
    const std::int32_t key[KEY] = {opts[0].id, x.s, bigram ? 0 : x.a, x.t, x.b, y.s, y.a, bigram ? 0 : y.b,
                                   ea ? ea->s_last : 0, ea ? ea->next : 0, ec ? ec->t_first : 0, ec ? ec->back : 0};
    std::uint64_t h = static_cast<std::uint32_t>(key[0]);
    for (int i = 1; i < KEY; ++i) h = mix(h * 0x100000001b3ULL ^ static_cast<std::uint32_t>(key[i]));
    const int found = group_index_.find(h, [&](int i) { return std::equal(key, key + KEY, group_keys_.data() + static_cast<std::size_t>(i) * KEY); });
    if (found >= 0) return group_first_[static_cast<std::size_t>(found)];
    const std::size_t first = labels_.size();
    for (int i = 0; i < count; ++i) labels_.push_back(make(j, *opts[i].option, a, ea, c, ec));
    group_keys_.insert(group_keys_.end(), key, key + KEY);
    group_first_.push_back(first);
    group_index_.insert(h, static_cast<int>(group_first_.size()) - 1);
    return first;
  }
  int label_at(std::size_t i) const { return labels_[i]; }

 private:
  // What an option alone puts in its symbols: the text after the positions (":label:target"),
  // the text of the n-grams inside it, and their LM cost (summed from 0 in order).
  struct Fixed {
    bool made = false;
    std::string suffix, inside;
    double cost = 0.0;
  };

  const Fixed& fixed(const Option& opt) {
    const std::size_t at = static_cast<std::size_t>(opt.id);
    if (fixed_.size() <= at) fixed_.resize(at + 1);
    Fixed& f = fixed_[at];
    if (f.made) return f;
    f.made = true;
    f.suffix = ":" + std::to_string(input_label(opt)) + ":";
    if (opt.index >= 0) {
      append_words(f.suffix, opt.words.data(), opt.words.size());
    } else {
      f.suffix += "</s>";
    }
    const std::size_t k = static_cast<std::size_t>(p_.order() - 1);
    if (opt.index >= 0)  // the n-grams inside the phrase (ŵ's LM part)
      for (std::size_t i = k; i < opt.words.size(); ++i) {
        const Event e{{opt.words.begin() + static_cast<std::ptrdiff_t>(i - k), opt.words.begin() + static_cast<std::ptrdiff_t>(i)},
                      opt.words[i]};
        append_event(f.inside, e);
        f.cost += cost(e);
      }
    return f;
  }

  double cost(const Event& e) const {  // lm_fst.event_cost
    const int m = static_cast<int>(e.context.size());
    return e.word < 0 ? -p_.backoff(e.context.data(), m) : -p_.ngram(e.context.data(), m, e.word);
  }

  void append_words(std::string& out, const WordId* ids, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out += ' ';
      out += vocab_.at(static_cast<std::size_t>(ids[i]));
    }
  }

  // "|" and reorder.event_text: "a b c" for ln p(c | a b), "bo:a b" for the backoff of "a b".
  void append_event(std::string& out, const Event& e) const {
    out += '|';
    if (e.word < 0) out += "bo:";
    append_words(out, e.context.data(), e.context.size());
    if (e.word >= 0) {
      if (!e.context.empty()) out += ' ';
      out += vocab_.at(static_cast<std::size_t>(e.word));
    }
  }

  static void append_token(std::string& out, int position) {  // reorder._token
    if (position == PHI) {
      out += '_';
    } else {
      out += std::to_string(position - 1);
    }
  }

  static constexpr int KEY = 12;  // labels()'s key: 8 ints of the group and tapes, 4 of their LR ends

  // reordering.charge of the transition a opt c (ea, ec: the LR ends of a and c, or null):
  // (the orientation of opt or PHI, that of c's first phrase or PHI, the weighted score), in
  // Space::expand's order of operations. </s> charges nothing.
  double charge(int j, const Option& opt, const Sig* a, const Ends* ea, const Sig* c, const Ends* ec, int& o1, int& o2) const {
    o1 = o2 = PHI;
    if (opt.s == p_.end()) return 0.0;
    double v = 0.0;
    if (a) {
      o1 = a->t == 0 ? p_.orientation(0, 0, true, j + 1, opt.t) : p_.orientation(ea->s_last, a->t, false, j + 1, opt.t);
      v += a->t == 0 ? p_.lr_back(opt.id, o1) : p_.lr_back(opt.id, o1) + p_.lr_next(ea->next, o1);
    }
    if (c) {
      o2 = p_.orientation(j + 1, opt.t, false, c->s, ec->t_first);
      v += p_.lr_back_of_row(ec->back, o2) + p_.lr_next(p_.lr_row(opt.id), o2);
    }
    return v;
  }

  // The label of opt joined to a and c: the one its symbol already has, or a new one.
  int make(int j, const Option& opt, const Sig* a, const Ends* ea, const Sig* c, const Ends* ec) {
    events_.clear();
    if (p_.order() == 2) {
      if (a) events_.push_back({{a->b}, opt.first()});
      if (c) events_.push_back({{opt.last()}, c->a});
    } else {
      sp_.join(a, opt, c, &events_);
    }
    const int s1 = a ? a->s : PHI, t1 = a ? a->t : PHI, s2 = c ? c->s : PHI;
    key_.assign({opt.id, s1, t1, s2});
    for (const Event& e : events_) {
      key_.push_back(static_cast<std::int32_t>(e.context.size()));
      key_.insert(key_.end(), e.context.begin(), e.context.end());
      key_.push_back(e.word);
    }
    // With lexicalized reordering the symbol ends with "|lr:O1,O2=V" (reorder.py's _Builder.op).
    const bool lr = p_.has_reordering();
    int o1 = PHI, o2 = PHI;
    const double v = lr ? charge(j, opt, a, ea, c, ec, o1, o2) : 0.0;
    if (lr) {
      std::uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      key_.insert(key_.end(), {-2, o1, o2, static_cast<std::int32_t>(bits >> 32), static_cast<std::int32_t>(bits & 0xffffffffU)});
    }
    std::uint64_t h = key_.size();
    for (const std::int32_t v : key_) h = mix(h * 0x100000001b3ULL ^ static_cast<std::uint32_t>(v));
    const std::size_t n = key_.size();
    const int found = text_index_.find(h, [&](int i) {
      const std::size_t at = text_at_[static_cast<std::size_t>(i)];
      return text_at_[static_cast<std::size_t>(i) + 1] - at == n && std::equal(key_.begin(), key_.end(), text_keys_.begin() + static_cast<std::ptrdiff_t>(at));
    });
    if (found >= 0) return found + 1;  // text i is label i + 1
    text_keys_.insert(text_keys_.end(), key_.begin(), key_.end());
    text_at_.push_back(text_keys_.size());
    const int label = static_cast<int>(size());
    text_index_.insert(h, label - 1);
    const Fixed& f = fixed(opt);
    std::string& text = out_.symbols;
    text += "op:";
    append_token(text, opt.s);
    text += '-';
    append_token(text, opt.t);
    text += ':';
    append_token(text, s1);
    text += ':';
    append_token(text, t1);
    text += ':';
    append_token(text, s2);
    text += f.suffix;
    text += f.inside;
    double total = f.cost;  // lm_fst.events_cost: the events' costs summed in order
    for (const Event& e : events_) {
      append_event(text, e);
      total += cost(e);
    }
    if (lr) {
      const int kind = p_.reordering_kind();
      text += "|lr:";
      text += orientation_name(kind, o1);
      text += ',';
      text += orientation_name(kind, o2);
      text += '=';
      text += python_repr(v);
      out_.lr.push_back(v);
    }
    text += '\n';
    out_.option.push_back(opt.index);
    out_.s1.push_back(s1);
    out_.s2.push_back(s2);
    // Moses' semantics without [early-distortion-cost]: no jump into </s> (reorder.py's _Builder.op).
    const bool free_final = opt.s == p_.end() && p_.moses() && !p_.charge_final();
    out_.jumps.push_back(free_final ? 0 : (a ? j - a->t : 0) + (c ? opt.t + 1 - c->s : 0));
    out_.lm_cost.push_back(total);
    return label;
  }

  const Problem& p_;
  Space& sp_;
  const std::vector<std::string>& vocab_;
  const std::vector<int>& input_labels_;
  Reordering& out_;
  // labels(): a group and its tapes -> its options' labels (from group_first_ in labels_).
  Index group_index_;
  std::vector<std::int32_t> group_keys_;  // KEY per entry
  std::vector<std::size_t> group_first_;
  std::vector<int> labels_;
  // make(): the ids a symbol spells -> its label (text i, label i + 1; keys from text_at_[i]).
  Index text_index_;
  std::vector<std::int32_t> text_keys_, key_;
  std::vector<std::size_t> text_at_{0};
  std::vector<Event> events_;
  std::vector<Fixed> fixed_;  // by option id
};

const Sig* tape_starting(const Sig* sigs, int r, int s) {
  if (s == PHI) return nullptr;
  for (int k = 0; k < r; ++k)
    if (sigs[k].s == s) return &sigs[k];
  throw std::logic_error("build_reordering: no tape starts at " + std::to_string(s));
}

// The completion bound of signature states for a pruned walk (ReorderOptions::threshold): the
// best segmentation of the positions after j, each open tape's first words at their best after
// anything that may precede it (exact.h, tape_bound), the </s> bound, and the distortion still
// to come: with eta >= 0 at least the least jumps of signature_beam's "bound" (a tape ending at
// t < j is left by a jump of at least j - t, one starting at s > 0 entered by one of at least
// j + 2 - s: tapes are only ever joined through a phrase placed after j, or </s>); with eta < 0
// at most d per junction still to form (one per position left, one per tape).
class Completion {
 public:
  Completion(const Problem& p, const Space& sp, bool ng)
      : p_(p), sp_(sp), ng_(ng), n_(p.n()), k_(p.order() - 1), d_(std::min(p.d(), p.n() + 2)),
        b_(exact_bounds(p, true)), eos_(b_.eos_lifted) {
    if (sp.lr) lr_suffix();
  }

  // ends: the tapes' LR ends (with a reordering model; else null).
  double operator()(int j, const Sig* sigs, const Ends* ends, int r) {
    if (j >= p_.end()) return 0.0;  // the goal
    double h = b_.suffix[static_cast<std::size_t>(j) + 1] + eos_;
    if (ends) h += lr_suffix_[static_cast<std::size_t>(j) + 1] + sp_.pending_bound(sigs, ends, r);
    for (int i = 0; i < r; ++i)
      if (sigs[i].s != 0) h += tape(sigs[i]);
    if (p_.eta() >= 0.0)  // signature_beam's "bound" (statespace.h, least_jumps)
      return h - p_.eta() * static_cast<double>(least_jumps(sigs, r, j, n_, p_.charge_final()));
    return h - p_.eta() * d_ * (n_ - j + r);
  }

 private:
  // reorder.py's _lr_suffix: lr_suffix_[p], the best over covers of positions p..n by options of
  // the sum of their Space::phrase_bound (-inf where none exists).
  void lr_suffix() {
    const double none = -std::numeric_limits<double>::infinity();
    lr_suffix_.assign(static_cast<std::size_t>(n_) + 2, none);
    lr_suffix_[static_cast<std::size_t>(n_) + 1] = 0.0;
    for (int s = n_; s >= 1; --s)
      for (const Option& o : p_.by_start()[static_cast<std::size_t>(s)]) {
        const double rest = lr_suffix_[static_cast<std::size_t>(o.t) + 1];
        if (!(rest > none)) continue;
        const double v = sp_.phrase_bound(o) + rest;
        if (v > lr_suffix_[static_cast<std::size_t>(s)]) lr_suffix_[static_cast<std::size_t>(s)] = v;
      }
  }

  double tape(const Sig& sig) {
    const std::uint64_t key = pair64(sig.s, sig.a);
    const int found = index_.find(mix(key), [&](int i) { return keys_[static_cast<std::size_t>(i)] == key; });
    if (found >= 0) return values_[static_cast<std::size_t>(found)];
    double v;
    if (ng_) {
      v = tape_bound(p_, b_, sig.s, sp_.contexts.words(sig.a), std::min(sp_.contexts.len(sig.a), k_));
    } else {
      const WordId first = sig.a;
      v = tape_bound(p_, b_, sig.s, &first, 1);
    }
    keys_.push_back(key);
    values_.push_back(v);
    index_.insert(mix(key), static_cast<int>(values_.size()) - 1);
    return v;
  }

  const Problem& p_;
  const Space& sp_;
  const bool ng_;
  const int n_, k_, d_;
  const ExactBounds b_;
  const double eos_;
  std::vector<double> lr_suffix_;
  Index index_;
  std::vector<std::uint64_t> keys_;
  std::vector<double> values_;
};

// The backward pass of a pruned walk: each state's best completion (beta) within R; only the arcs
// of derivations scoring at least `floor` stay (alpha + arc + beta >= floor), and the states they
// join, renumbered in order (the start stays 0; `goal` is renumbered too, -1 if it goes).
void keep_completing(const std::vector<Layer>& layers, const std::vector<double>& alpha,
                     const std::vector<double>& delta, double floor, int& goal, std::vector<Arc>& arcs,
                     std::vector<std::uint32_t>& first, std::vector<std::uint32_t>& count) {
  const std::size_t states = first.size();
  const double none = -std::numeric_limits<double>::infinity();
  std::vector<double> beta(states, none);
  for (std::size_t j = layers.size(); j-- > 0;)  // arcs go from layer j to a later one
    for (int x = 0; x < layers[j].size(); ++x) {
      const auto q = static_cast<std::size_t>(layers[j].id(x));
      double b = static_cast<int>(q) == goal ? 0.0 : none;
      for (std::uint32_t a = first[q]; a < first[q] + count[q]; ++a)
        b = std::max(b, delta[a] + beta[static_cast<std::size_t>(arcs[a].nextstate)]);
      beta[q] = b;
    }
  std::vector<int> number(states, -1);
  number[0] = 0;
  std::vector<char> keep(arcs.size(), 0);
  for (std::size_t q = 0; q < states; ++q)
    for (std::uint32_t a = first[q]; a < first[q] + count[q]; ++a)
      if (alpha[q] + delta[a] + beta[static_cast<std::size_t>(arcs[a].nextstate)] >= floor) {
        keep[a] = 1;
        number[static_cast<std::size_t>(arcs[a].nextstate)] = 0;  // marked; numbered below
      }
  int next = 0;
  for (std::size_t q = 0; q < states; ++q)
    if (number[q] >= 0) number[q] = next++;
  std::vector<Arc> kept;
  std::vector<std::uint32_t> kfirst(static_cast<std::size_t>(next), 0), kcount(static_cast<std::size_t>(next), 0);
  for (std::size_t q = 0; q < states; ++q) {
    if (number[q] < 0) continue;
    const auto at = static_cast<std::uint32_t>(kept.size());
    for (std::uint32_t a = first[q]; a < first[q] + count[q]; ++a)
      if (keep[a]) {
        Arc arc = arcs[a];
        arc.nextstate = number[static_cast<std::size_t>(arc.nextstate)];
        kept.push_back(arc);
      }
    kfirst[static_cast<std::size_t>(number[q])] = at;
    kcount[static_cast<std::size_t>(number[q])] = static_cast<std::uint32_t>(kept.size()) - at;
  }
  goal = goal >= 0 ? number[static_cast<std::size_t>(goal)] : -1;
  arcs.swap(kept);
  first.swap(kfirst);
  count.swap(kcount);
}

template <bool NG>
void walk(const Problem& problem, Space& sp, Operations& ops, const ReorderOptions& options, Reordering& out,
          std::vector<Arc>& arcs, std::vector<std::uint32_t>& first, std::vector<std::uint32_t>& count) {
  const bool pruned = options.threshold > -std::numeric_limits<double>::infinity();
  const double floor = options.threshold - 1e-9 * std::max(1.0, std::abs(options.threshold));
  std::unique_ptr<Completion> completion;
  if (pruned) completion = std::make_unique<Completion>(problem, sp, NG);
  std::vector<double> alpha(1, 0.0);  // by state id: the best score of a path from the start
  std::vector<double> delta;          // by arc (pruned walks): its score
  const int end = problem.end();
  const double eta = problem.eta();
  std::vector<Layer> layers(static_cast<std::size_t>(end) + 1);
  const bool lr = sp.lr;  // the states carry their tapes' LR ends
  const Ends* no_ends = lr ? &Space::NO_ENDS : nullptr;
  layers[0].add(state_hash(&sp.start, no_ends, 1), &sp.start, no_ends, 1, 0);
  long states = 1, transitions = 0;
  Successors succ;
  std::vector<std::uint64_t> hashes;
  std::vector<Sig> sigs;
  std::vector<Ends> ends;
  for (int j = 0; j < end; ++j) {
    Layer& layer = layers[static_cast<std::size_t>(j)];
    for (int x = 0; x < layer.size(); ++x) {
      const int r = layer.r(x), from = layer.id(x);
      sigs.assign(layer.sigs(x), layer.sigs(x) + r);
      if (lr) ends.assign(layer.ends(x), layer.ends(x) + r);
      const Ends* e = lr ? ends.data() : nullptr;
      hashes.resize(static_cast<std::size_t>(r));
      for (int k = 0; k < r; ++k) hashes[static_cast<std::size_t>(k)] = tape_hash(sigs[static_cast<std::size_t>(k)], e ? &e[k] : nullptr);
      if (lr) sp.expand<NG, true>(j, sigs.data(), e, r, hashes.data(), succ);
      else sp.expand<NG, false>(j, sigs.data(), e, r, hashes.data(), succ);
      const auto at = static_cast<std::uint32_t>(arcs.size());  // a state's arcs are one block
      for (const Batch& b : succ) {
        Layer& target = layers[static_cast<std::size_t>(b.t)];
        Sig* key = succ.keys.data() + b.key;
        Ends* key_ends = lr ? succ.key_ends.data() + b.key : nullptr;
        const Sig* a = tape_starting(sigs.data(), r, b.s1);
        const Sig* c = tape_starting(sigs.data(), r, b.s2);
        const Ends* ea = a && lr ? e + (a - sigs.data()) : nullptr;
        const Ends* ec = c && lr ? e + (c - sigs.data()) : nullptr;
        const std::size_t labels = ops.labels(j, b.opts, b.count, a, ea, c, ec);
        for (int y = 0; y < b.count; ++y) {
          const std::size_t q = b.first + static_cast<std::size_t>(y);
          key[b.pos] = succ.sig[q];
          if (lr) key_ends[b.pos] = succ.ends[q];
          const double reach = alpha[static_cast<std::size_t>(from)] + succ.delta[q];
          if (pruned && reach + (*completion)(b.t, key, key_ends, b.nr) < floor) continue;
          ++transitions;  // (one per arc of R)
          int to = target.find(succ.hash[q], key, key_ends, b.nr);
          if (to < 0) {
            to = static_cast<int>(states++);
            if (options.max_states >= 0 && states > options.max_states) {
              out.status = "budget";
              out.message = "more than " + std::to_string(options.max_states) + " states (--max-states)";
              return;
            }
            target.add(succ.hash[q], key, key_ends, b.nr, to);
            alpha.push_back(reach);
          }
          alpha[static_cast<std::size_t>(to)] = std::max(alpha[static_cast<std::size_t>(to)], reach);
          const int label = ops.label_at(labels + static_cast<std::size_t>(y));
          // eta × jumps, less the label's reordering charge (reorder.py's arc cost)
          const double cost = lr ? eta * out.jumps[static_cast<std::size_t>(label)] - out.lr[static_cast<std::size_t>(label)]
                                 : eta * out.jumps[static_cast<std::size_t>(label)];
          arcs.push_back({ops.input_label(*b.opts[y].option), label, static_cast<float>(cost), to});
          if (pruned) delta.push_back(succ.delta[q]);
        }
      }
      if (first.size() < static_cast<std::size_t>(states)) {
        first.resize(static_cast<std::size_t>(states) * 2, 0);
        count.resize(static_cast<std::size_t>(states) * 2, 0);
      }
      first[static_cast<std::size_t>(from)] = at;
      count[static_cast<std::size_t>(from)] = static_cast<std::uint32_t>(arcs.size()) - at;
    }
  }
  first.resize(static_cast<std::size_t>(states), 0);
  count.resize(static_cast<std::size_t>(states), 0);
  out.states = states;
  out.transitions = transitions;
  const Layer& last = layers[static_cast<std::size_t>(end)];
  int goal = last.find(state_hash(&sp.goal, no_ends, 1), &sp.goal, no_ends, 1);
  if (goal >= 0) out.best = alpha[static_cast<std::size_t>(goal)];
  if (pruned) {
    keep_completing(layers, alpha, delta, floor, goal, arcs, first, count);
    out.transitions = static_cast<long>(arcs.size());  // R's arcs (out.states: the states visited)
  }
  out.fst = const_fst(static_cast<long>(first.size()), 0, goal, arcs, first, count);
}

}  // namespace

Reordering build_reordering(const Problem& problem, const std::vector<std::string>& vocab,
                            const std::vector<int>& input_labels, const ReorderOptions& options) {
  if (!problem.finished()) throw std::logic_error("build_reordering: the problem is not finished");
  if (vocab.size() != problem.vocab_size())
    throw std::invalid_argument("build_reordering: vocab has " + std::to_string(vocab.size()) +
                                " words, the problem " + std::to_string(problem.vocab_size()));
  Reordering out;
  Space sp(problem, options.minimize);
  Operations ops(problem, sp, vocab, input_labels, out);
  std::vector<Arc> arcs;
  arcs.reserve(1 << 16);
  std::vector<std::uint32_t> first, count;
  if (problem.order() > 2) walk<true>(problem, sp, ops, options, out, arcs, first, count);
  else walk<false>(problem, sp, ops, options, out, arcs, first, count);
  if (!out.status.empty()) return out;
  // L: one state, final, with a self-loop per operation label costing its LM events.
  std::vector<Arc> larcs;
  for (std::size_t label = 1; label < ops.size(); ++label)
    larcs.push_back({static_cast<std::int32_t>(label), static_cast<std::int32_t>(label),
                     static_cast<float>(out.lm_cost[label]), 0});
  out.lm_fst = const_fst(1, 0, 0, larcs, {0}, {static_cast<std::uint32_t>(larcs.size())});
  return out;
}

}  // namespace fstdecode
