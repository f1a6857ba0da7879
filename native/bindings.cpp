// The only file where Python and the native core meet (as kenlm.pyx is for KenLM). Every search
// releases the GIL, so threads can decode sentences side by side.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "coverage.h"
#include "exact.h"
#include "lm.h"
#include "problem.h"
#include "reorder.h"
#include "signature.h"
#include "stack.h"
#include "table.h"

namespace py = pybind11;
using namespace fstdecode;

namespace fstdecode {
void bind_language_model(py::module_& m);  // bind_language_model.cpp: LanguageModel, RestrictedLM
void bind_kenlm(py::module_& m);           // bind_kenlm.cpp: KenLMBinary
}  // namespace fstdecode

PYBIND11_MODULE(_core, m) {
  m.doc() = "fstdecode's native search core";
  py::register_exception<ArpaFormatError>(m, "ArpaFormatError", PyExc_ValueError);
  bind_language_model(m);  // first: the base class of NgramLM and KenLMBinary
  bind_kenlm(m);           // (section: kenlm binary) in bind_kenlm.cpp

  // ---- LM -------------------------------------------------------------------------------
  // (section: lm)
  // Word arguments follow ArpaLM's dict lookups: a str not in the vocabulary (or not encodable
  // as UTF-8) and any other hashable object are <unk>; an unhashable one raises TypeError.
  struct LmArgs {
    static WordId word_id(const NgramLM& lm, PyObject* item) {
      if (PyUnicode_Check(item)) {
        Py_ssize_t size = 0;
        const char* utf8 = PyUnicode_AsUTF8AndSize(item, &size);
        if (utf8 == nullptr) {  // lone surrogates: never a word of the file
          PyErr_Clear();
          return lm.unk();
        }
        return lm.index(std::string_view(utf8, static_cast<std::size_t>(size)));
      }
      if (PyObject_Hash(item) == -1) throw py::error_already_set();
      return lm.unk();
    }
    // The ids of the last `keep` items of `words` (all with keep < 0), as ArpaLM maps them.
    static void word_ids(const NgramLM& lm, py::handle words, std::vector<WordId>& out, Py_ssize_t keep = -1) {
      auto fast = py::reinterpret_steal<py::object>(PySequence_Fast(words.ptr(), "expected a sequence of words"));
      if (!fast) throw py::error_already_set();
      const Py_ssize_t size = PySequence_Fast_GET_SIZE(fast.ptr());
      PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
      const Py_ssize_t from = keep < 0 ? 0 : std::max<Py_ssize_t>(0, size - keep);
      out.clear();
      out.reserve(static_cast<std::size_t>(size - from));
      for (Py_ssize_t i = from; i < size; ++i) out.push_back(word_id(lm, items[i]));
    }
    // Word ids given by the caller (0 <= id < vocab_size).
    static void checked_ids(const NgramLM& lm, const std::vector<WordId>& ids) {
      for (const WordId id : ids) checked_id(lm, id);
    }
    static void checked_id(const NgramLM& lm, WordId id) {
      if (id < 0 || static_cast<std::size_t>(id) >= lm.vocab().size())
        throw py::index_error("word id " + std::to_string(id) + " is not in the LM's vocabulary");
    }
    static void not_str(py::handle h, const char* what) {
      if (PyUnicode_Check(h.ptr())) throw py::type_error(std::string(what) + " must be a sequence of words, not a str");
    }
    // ArpaLM._score_span: sum of ln p(seq[i] | seq[:i]) for i >= start.
    static double span(const NgramLM& lm, const std::vector<WordId>& seq, std::size_t start) {
      const std::size_t n = static_cast<std::size_t>(lm.order() - 1);
      double total = 0.0;
      for (std::size_t i = start; i < seq.size(); ++i) {
        const std::size_t lo = i > n ? i - n : 0;
        total += lm.logprob(seq.data() + lo, static_cast<int>(i - lo), seq[i]);
      }
      return total;
    }
  };

  py::class_<NgramLM, LanguageModel, std::shared_ptr<NgramLM>>(
      m, "NgramLM",
      "A back-off n-gram LM read from ARPA text with KenLM's semantics (fstdecode.io.arpa.ArpaLM, "
      "value for value); scores are natural logs. Words are interned to ids 0..vocab_size-1.")
      .def_static(
          "parse_arpa",
          [](const py::bytes& text, int max_order) {
            char* data = nullptr;
            Py_ssize_t size = 0;
            if (PyBytes_AsStringAndSize(text.ptr(), &data, &size) != 0) throw py::error_already_set();
            std::shared_ptr<NgramLM> lm;
            {
              py::gil_scoped_release unlocked;  // `text` is immutable and held by the caller
              lm = std::make_shared<NgramLM>(
                  NgramLM::parse_arpa(std::string_view(data, static_cast<std::size_t>(size)), max_order));
            }
            return lm;
          },
          "Parse the whole text of an ARPA file (decompressed) up to max_order (0: the file's "
          "order); raises ArpaFormatError where ArpaLM.from_file raises ArpaError.",
          py::arg("text"), py::arg("max_order") = 0)
      .def_property_readonly("order", &NgramLM::order)
      .def_property_readonly(
          "counts",
          [](const NgramLM& lm) {
            py::tuple t(lm.counts().size());
            for (std::size_t i = 0; i < lm.counts().size(); ++i) t[i] = py::int_(lm.counts()[i]);
            return t;
          },
          "the \\data\\ count of each kept order")
      .def_property_readonly("vocab_size", [](const NgramLM& lm) { return lm.vocab().size(); })
      .def_property_readonly("unk", &NgramLM::unk, "the id of <unk>")
      .def(
          "restrict",
          [](const NgramLM& lm, int order) {
            if (order < 1 || order > lm.order())
              throw py::value_error("cannot restrict an order-" + std::to_string(lm.order()) +
                                    " model to order " + std::to_string(order));
            return std::make_shared<NgramLM>(lm.restrict(order));
          },
          "the model up to `order`, as parse_arpa(text, order) reads it", py::arg("order"))
      // ---- ids
      .def(
          "index", [](const NgramLM& lm, py::handle word) { return LmArgs::word_id(lm, word.ptr()); },
          "the id of a word (<unk>'s when out of vocabulary)", py::arg("word"))
      .def(
          "indices",
          [](const NgramLM& lm, py::handle words) {
            std::vector<WordId> ids;
            LmArgs::word_ids(lm, words, ids);
            return ids;
          },
          "index() of each word", py::arg("words"))
      .def(
          "word",
          [](const NgramLM& lm, WordId id) {
            LmArgs::checked_id(lm, id);
            return py::str(lm.vocab().word(id));
          },
          "the word of an id", py::arg("id"))
      .def(
          "words",
          [](const NgramLM& lm) {
            py::list out(lm.vocab().size());
            for (std::size_t i = 0; i < lm.vocab().size(); ++i)
              out[i] = py::str(lm.vocab().word(static_cast<WordId>(i)));
            return out;
          },
          "every word, by id (<unk> included; not the alias <UNK>)")
      .def(
          "contains",
          [](const NgramLM& lm, py::handle word) {
            if (!PyUnicode_Check(word.ptr())) {
              if (PyObject_Hash(word.ptr()) == -1) throw py::error_already_set();
              return false;
            }
            Py_ssize_t size = 0;
            const char* utf8 = PyUnicode_AsUTF8AndSize(word.ptr(), &size);
            if (utf8 == nullptr) {
              PyErr_Clear();
              return false;
            }
            return lm.vocab().find(std::string_view(utf8, static_cast<std::size_t>(size))) >= 0;
          },
          "True iff the word is in the unigram vocabulary (<unk> always is; <UNK> if the file has it)",
          py::arg("word"))
      .def(
          "logprob",
          [](const NgramLM& lm, const std::vector<WordId>& context, WordId w) {
            LmArgs::checked_ids(lm, context);
            LmArgs::checked_id(lm, w);
            return lm.logprob(context.data(), static_cast<int>(context.size()), w);
          },
          "ln p(w | context) over ids, the most recent word last", py::arg("context"), py::arg("w"))
      .def(
          "backoff",
          [](const NgramLM& lm, const std::vector<WordId>& ids) {
            LmArgs::checked_ids(lm, ids);
            return lm.backoff(ids.data(), static_cast<int>(ids.size()));
          },
          "ln backoff of the n-gram of ids (0 when absent)", py::arg("ids"))
      .def(
          "extends",
          [](const NgramLM& lm, const std::vector<WordId>& ids) {
            LmArgs::checked_ids(lm, ids);
            return lm.extends(ids.data(), static_cast<int>(ids.size()));
          },
          "True iff a stored longer n-gram starts with the ids", py::arg("ids"))
      // ---- words (ArpaLM's methods; out-of-vocabulary words are <unk>)
      .def(
          "logprob_words",
          [](const NgramLM& lm, py::handle context, py::handle word) {
            LmArgs::not_str(context, "context");
            std::vector<WordId> ctx;
            if (lm.order() > 1) {
              const int nonempty = PyObject_IsTrue(context.ptr());
              if (nonempty < 0) throw py::error_already_set();
              if (nonempty) LmArgs::word_ids(lm, context, ctx, lm.order() - 1);
            }
            const WordId w = LmArgs::word_id(lm, word.ptr());
            return lm.logprob(ctx.data(), static_cast<int>(ctx.size()), w);
          },
          "ArpaLM.logprob", py::arg("context"), py::arg("word"))
      .def(
          "backoff_words",
          [](const NgramLM& lm, py::handle context) {
            std::vector<WordId> ids;
            LmArgs::word_ids(lm, context, ids);
            return lm.backoff(ids.data(), static_cast<int>(ids.size()));
          },
          "ArpaLM.backoff", py::arg("context"))
      .def(
          "extends_words",
          [](const NgramLM& lm, py::handle context) {
            std::vector<WordId> ids;
            LmArgs::word_ids(lm, context, ids);
            return lm.extends(ids.data(), static_cast<int>(ids.size()));
          },
          "ArpaLM.extends", py::arg("context"))
      .def(
          "score_sentence",
          [](const NgramLM& lm, py::handle words, bool bos, bool eos) {
            LmArgs::not_str(words, "words");
            std::vector<WordId> body;
            LmArgs::word_ids(lm, words, body);
            std::vector<WordId> seq;
            seq.reserve(body.size() + 2);
            if (bos) seq.push_back(lm.index("<s>"));
            seq.insert(seq.end(), body.begin(), body.end());
            if (eos) seq.push_back(lm.index("</s>"));
            return LmArgs::span(lm, seq, bos ? 1 : 0);
          },
          "ArpaLM.score_sentence", py::arg("words"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "phrase_estimate",
          [](const NgramLM& lm, py::handle words) {
            LmArgs::not_str(words, "words");
            auto fast = py::reinterpret_steal<py::object>(PySequence_Fast(words.ptr(), "expected a sequence of words"));
            if (!fast) throw py::error_already_set();
            std::vector<WordId> seq;
            LmArgs::word_ids(lm, fast, seq);
            std::size_t start = 0;
            if (!seq.empty()) {
              const int first_is_bos = PyObject_RichCompareBool(PySequence_Fast_GET_ITEM(fast.ptr(), 0),
                                                                py::str("<s>").ptr(), Py_EQ);
              if (first_is_bos < 0) throw py::error_already_set();
              start = first_is_bos ? 1 : 0;
            }
            return LmArgs::span(lm, seq, start);
          },
          "ArpaLM.phrase_estimate", py::arg("words"))
      .def(
          "unigram_logprob",
          [](const NgramLM& lm, py::handle word) {
            return lm.unigram(LmArgs::word_id(lm, word.ptr()));
          },
          "ArpaLM.unigram_logprob", py::arg("word"))
      .def(
          "spelling",
          [](const NgramLM& lm, py::handle word) {
            return py::str(lm.vocab().word(LmArgs::word_id(lm, word.ptr())));
          },
          "ArpaLM.word: the word itself if in the vocabulary, else <unk>", py::arg("word"));

  // ---- Problem and results --------------------------------------------------------------
  // (section: problem)
  py::class_<Problem>(m, "Problem",
                      "One sentence's search problem (fstdecode.problem.problem.SearchProblem): "
                      "options over the problem's word ids, scored with a LanguageModel (NgramLM or "
                      "KenLMBinary) through lm_id.")
      .def(py::init<const LanguageModel&, std::vector<WordId>, int, int, double, double, WordId, WordId>(),
           py::arg("lm"), py::arg("lm_id"), py::arg("n"), py::arg("d"), py::arg("eta"),
           py::arg("lm_weight"), py::arg("bos"), py::arg("eos"),
           py::keep_alive<1, 2>())  // the problem keeps its LM alive
      .def(
          "add_option",
          [](Problem& p, int s, int t, double score, std::vector<WordId> words, int index) {
            Option o;
            o.s = s;
            o.t = t;
            o.score = score;
            o.words = std::move(words);
            o.index = index;
            p.add_option(std::move(o));
          },
          py::arg("s"), py::arg("t"), py::arg("score"), py::arg("words"), py::arg("index"))
      .def(
          "add_options",
          [](Problem& p, const std::vector<int>& s, const std::vector<int>& t,
             const std::vector<double>& score, const std::vector<WordId>& words,
             const std::vector<int>& lengths, const std::vector<int>& index) {
            const std::size_t k = s.size();
            if (t.size() != k || score.size() != k || lengths.size() != k || index.size() != k)
              throw std::invalid_argument("add_options: s, t, score, lengths and index differ in length");
            std::size_t at = 0;
            for (std::size_t i = 0; i < k; ++i) {
              if (lengths[i] < 0 || at + static_cast<std::size_t>(lengths[i]) > words.size())
                throw std::invalid_argument("add_options: lengths do not fit words");
              Option o;
              o.s = s[i];
              o.t = t[i];
              o.score = score[i];
              o.words.assign(words.begin() + static_cast<std::ptrdiff_t>(at),
                             words.begin() + static_cast<std::ptrdiff_t>(at + lengths[i]));
              o.index = index[i];
              at += static_cast<std::size_t>(lengths[i]);
              p.add_option(std::move(o));
            }
            if (at != words.size()) throw std::invalid_argument("add_options: words longer than the lengths say");
          },
          "add_option for many options at once: words holds their words one after another",
          py::arg("s"), py::arg("t"), py::arg("score"), py::arg("words"), py::arg("lengths"),
          py::arg("index"))
      .def("finish", &Problem::finish)
      .def("set_reordering", &Problem::set_reordering,
           "after finish(): the lexicalized reordering rows by option id (kind 0 none, 1 msd, 2 mslr, "
           "3 monotonicity, 4 leftright; Option.lr_back and lr_next, weighted, flattened; width 0: no "
           "such direction)",
           py::arg("kind"), py::arg("back_width"), py::arg("next_width"), py::arg("back"), py::arg("next"))
      .def("set_semantics", &Problem::set_semantics,
           "Moses' distortion semantics (moses) or the paper's; charge_final: the jump into </s> is charged",
           py::arg("moses"), py::arg("charge_final"))
      .def_property_readonly("moses", &Problem::moses)
      .def_property_readonly("charge_final", &Problem::charge_final)
      .def_property_readonly("reordering_kind", &Problem::reordering_kind)
      .def_property_readonly("n", &Problem::n)
      .def_property_readonly("d", &Problem::d)
      .def_property_readonly("eta", &Problem::eta)
      .def_property_readonly("order", &Problem::order)
      .def_property_readonly("option_count", &Problem::option_count)
      .def(
          "ngram",
          [](const Problem& p, const std::vector<WordId>& context, WordId w) { return p.ngram(context, w); },
          "weighted ln p(w | context) over problem ids (SearchProblem.ngram)", py::arg("context"),
          py::arg("w"))
      .def(
          "backoff", [](const Problem& p, const std::vector<WordId>& context) { return p.backoff(context); },
          py::arg("context"))
      .def(
          "extends", [](const Problem& p, const std::vector<WordId>& context) { return p.extends(context); },
          py::arg("context"))
      .def(
          "options",
          [](const Problem& p) {
            py::list out;
            for (int s = 1; s <= p.n(); ++s)
              for (const Option& o : p.by_start()[static_cast<std::size_t>(s)])
                out.append(py::make_tuple(o.s, o.t, o.score, o.words, o.index));
            return out;
          },
          "(s, t, score, words, index) of every phrase option, by start, in order of addition")
      .def_property_readonly(
          "lm_ids",
          [](const Problem& p) {
            std::vector<WordId> out;
            for (WordId w = 0; w < static_cast<WordId>(p.vocab_size()); ++w) out.push_back(p.lm_id(w));
            return out;
          },
          "the LM id of each problem id");

  // ---- The FST method's R and L ----------------------------------------------------------
  // (section: reorder)
  m.def(
      "build_reordering",
      [](const Problem& problem, const std::vector<std::string>& vocab, const std::vector<int>& input_labels,
         long max_states, bool minimize, double threshold) {
        Reordering r;
        {
          py::gil_scoped_release release;
          r = build_reordering(problem, vocab, input_labels, ReorderOptions{max_states, minimize, threshold});
        }
        py::dict out;
        out["status"] = r.status;
        out["message"] = r.message;
        out["fst"] = py::bytes(r.fst);
        out["lm_fst"] = py::bytes(r.lm_fst);
        out["symbols"] = py::str(r.symbols);
        out["states"] = r.states;
        out["transitions"] = r.transitions;
        out["option"] = r.option;
        out["s1"] = r.s1;
        out["s2"] = r.s2;
        out["jumps"] = r.jumps;
        out["lm_cost"] = r.lm_cost;
        out["best"] = r.best;
        return out;
      },
      "R and L of the WFST cascade (fstdecode.fst.reorder.build_reordering): the FSTs as OpenFst "
      "binary ConstFsts, R's output symbols (one a line), and per output label its option index, "
      "s1, s2, jumps and LM cost",
      py::arg("problem"), py::arg("vocab"), py::arg("input_labels"), py::arg("max_states"),
      py::arg("minimize"), py::arg("threshold") = -std::numeric_limits<double>::infinity());

  // ---- Phrase table -----------------------------------------------------------------------
  // (section: table)
  py::class_<PhraseIndex>(m, "PhraseIndex",
                          "The model's phrase table with each pair's ŵ(p), registered per source "
                          "phrase; builds a sentence's Problem natively (table.h).")
      .def(py::init([](const LanguageModel& lm, std::vector<double> tm, double word, double phrase, double unknown,
                       double lm_weight, double unknown_value) {
             return std::make_unique<PhraseIndex>(
                 lm, PairWeights{std::move(tm), word, phrase, unknown, lm_weight}, unknown_value);
           }),
           py::arg("lm"), py::arg("tm"), py::arg("word"), py::arg("phrase"), py::arg("unknown"),
           py::arg("lm_weight"), py::arg("unknown_value"),
           py::keep_alive<1, 2>())  // the index keeps its LM alive
      .def("add_source", &PhraseIndex::add_source, py::arg("source"), py::arg("targets"), py::arg("scores"))
      .def(
          "sentence",
          [](const py::object& self, const std::vector<std::string>& words, int d, double eta) {
            std::vector<int> s, t, handle;
            std::unique_ptr<Problem> problem = self.cast<PhraseIndex&>().sentence(words, d, eta, s, t, handle);
            py::object core = py::cast(std::move(problem));
            py::detail::keep_alive_impl(core, self);  // a problem keeps the index (and its LM) alive
            return py::make_tuple(core, s, t, handle);
          },
          "(Problem, s, t, handle): the problem of the tokens and its hits (0-based spans; "
          "handle -1: an unknown word's copy)",
          py::arg("words"), py::arg("d"), py::arg("eta"));

  py::class_<Hypothesis>(m, "Hypothesis")
      .def_readonly("score", &Hypothesis::score)
      .def_readonly("options", &Hypothesis::options,
                    "the Python indices (add_option's index) of its options in target order");

  py::class_<Result>(m, "Result")
      .def_readonly("hypotheses", &Result::hypotheses, "best first")
      .def_readonly("optimal", &Result::optimal)
      .def_readonly("states", &Result::states)
      .def_readonly("transitions", &Result::transitions)
      .def_readonly("status", &Result::status, "'' (finished), 'budget' or 'none'")
      .def_readonly("message", &Result::message)
      .def_readonly("upper_bound", &Result::upper_bound, "a bound on every derivation's score (NaN: none)");

  // ---- Searches -------------------------------------------------------------------------
  // (section: searches)
  py::class_<StackOptions>(m, "StackOptions", "fstdecode.search.stack.StackOptions; thresholds < 0 are off")
      .def(py::init([](int nbest, long max_states, int beam_size, double beam_threshold,
                       bool distortion_estimate, bool early_pruning, double early_threshold) {
             StackOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.beam_size = beam_size;
             o.beam_threshold = beam_threshold;
             o.distortion_estimate = distortion_estimate;
             o.early_pruning = early_pruning;
             o.early_threshold = early_threshold;
             if (nbest < 1) throw std::invalid_argument("nbest must be >= 1");
             if (beam_size < 1) throw std::invalid_argument("beam_size must be >= 1");
             return o;
           }),
           py::arg("nbest") = 1, py::arg("max_states") = 2000000L, py::arg("beam_size") = 100,
           py::arg("beam_threshold") = -1.0, py::arg("distortion_estimate") = true,
           py::arg("early_pruning") = true, py::arg("early_threshold") = -1.0)
      .def_readwrite("nbest", &StackOptions::nbest)
      .def_readwrite("max_states", &StackOptions::max_states)
      .def_readwrite("beam_size", &StackOptions::beam_size)
      .def_readwrite("beam_threshold", &StackOptions::beam_threshold)
      .def_readwrite("distortion_estimate", &StackOptions::distortion_estimate)
      .def_readwrite("early_pruning", &StackOptions::early_pruning)
      .def_readwrite("early_threshold", &StackOptions::early_threshold);
  m.def("stack_search", &stack_search, "the stack decoder (fstdecode.search.stack.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());

  // ---- Signature searches ---------------------------------------------------------------
  // (section: signature)
  py::class_<SignatureDpOptions>(m, "SignatureDpOptions",
                                 "fstdecode.search.signature_dp.DpOptions (and BoundedOptions); "
                                 "max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, bool minimize) {
             if (nbest < 1) throw std::invalid_argument("nbest must be >= 1");
             SignatureDpOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.minimize = minimize;
             return o;
           }),
           py::arg("nbest") = 1, py::arg("max_states") = 200000L, py::arg("minimize") = true)
      .def_readonly("nbest", &SignatureDpOptions::nbest)
      .def_readonly("max_states", &SignatureDpOptions::max_states)
      .def_readonly("minimize", &SignatureDpOptions::minimize);
  py::class_<SignatureBeamOptions>(m, "SignatureBeamOptions",
                                   "fstdecode.search.signature_beam.BeamOptions; beam_threshold < 0: "
                                   "off; max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, long long beam_size, double beam_threshold,
                       const std::string& heuristic, bool minimize) {
             if (nbest < 1) throw std::invalid_argument("nbest must be >= 1");
             if (beam_size < 1) throw std::invalid_argument("beam_size must be >= 1");
             SignatureBeamOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.beam_size = beam_size;
             o.beam_threshold = beam_threshold;
             o.heuristic = heuristic_of(heuristic);
             o.minimize = minimize;
             return o;
           }),
           py::arg("nbest") = 1, py::arg("max_states") = 2000000L, py::arg("beam_size") = 100,
           py::arg("beam_threshold") = -1.0, py::arg("heuristic") = "unigram+distortion",
           py::arg("minimize") = true)
      .def_readonly("nbest", &SignatureBeamOptions::nbest)
      .def_readonly("max_states", &SignatureBeamOptions::max_states)
      .def_readonly("beam_size", &SignatureBeamOptions::beam_size)
      .def_readonly("beam_threshold", &SignatureBeamOptions::beam_threshold)
      .def_property_readonly("heuristic", [](const SignatureBeamOptions& o) { return heuristic_name(o.heuristic); })
      .def_readonly("minimize", &SignatureBeamOptions::minimize);
  m.def("signature_dp", &signature_dp, "the signature-state DP (fstdecode.search.signature_dp.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  m.def("signature_beam", &signature_beam, "the signature beam (fstdecode.search.signature_beam.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  m.def("signature_bounded", &signature_bounded, "the bounded exact search (fstdecode.search.bounded.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());

  // ---- Coverage DP ----------------------------------------------------------------------
  // (section: coverage)
  py::class_<CoverageOptions>(m, "CoverageOptions",
                              "fstdecode.search.coverage_dp.CoverageOptions; max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, bool minimize) {
             if (nbest < 1) throw std::invalid_argument("nbest must be >= 1");
             CoverageOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.minimize = minimize;
             return o;
           }),
           py::arg("nbest") = 1, py::arg("max_states") = 200000L, py::arg("minimize") = true)
      .def_readonly("nbest", &CoverageOptions::nbest)
      .def_readonly("max_states", &CoverageOptions::max_states)
      .def_readonly("minimize", &CoverageOptions::minimize);
  m.def("coverage_search", &coverage_search,
        "the exact coverage-vector DP (fstdecode.search.coverage_dp.search)", py::arg("problem"),
        py::arg("options"), py::call_guard<py::gil_scoped_release>());

  // ---- Exact search ---------------------------------------------------------------------
  // (section: exact)
  py::class_<ExactOptions>(m, "ExactOptions",
                           "fstdecode.search.exact.ExactOptions; max_states < 0: no budget; time_limit <= 0: none")
      .def(py::init([](int nbest, long max_states, double time_limit, double lower_bound) {
             if (nbest < 1) throw std::invalid_argument("nbest must be >= 1");
             ExactOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.time_limit = time_limit;
             o.lower_bound = lower_bound;
             return o;
           }),
           py::arg("nbest") = 1, py::arg("max_states") = -1L, py::arg("time_limit") = -1.0,
           py::arg("lower_bound") = -std::numeric_limits<double>::infinity())
      .def_readonly("nbest", &ExactOptions::nbest)
      .def_readonly("max_states", &ExactOptions::max_states)
      .def_readonly("time_limit", &ExactOptions::time_limit)
      .def_readonly("lower_bound", &ExactOptions::lower_bound);
  py::class_<ExactBounds>(m, "ExactBounds", "the pieces of the exact search's heuristic (tests)")
      .def_readonly("beta", &ExactBounds::beta, "by option id (add_option order)")
      .def_readonly("eos", &ExactBounds::eos)
      .def_readonly("cover", &ExactBounds::cover, "cover[a][b], 1 <= a <= b <= n")
      .def_readonly("before", &ExactBounds::before, "with tapes: the contexts (words) before each start")
      .def_readonly("lifts", &ExactBounds::lifts, "with tapes: each context's charge")
      .def_readonly("eos_lifted", &ExactBounds::eos_lifted)
      .def_readonly("suffix", &ExactBounds::suffix);
  m.def("exact_bounds", &exact_bounds, "the heuristic's pieces of a problem (with tapes: the tape bounds' too)",
        py::arg("problem"), py::arg("tapes") = false, py::call_guard<py::gil_scoped_release>());
  m.def("exact_search", &exact_search, "A* over coverage states (fstdecode.search.exact.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  py::class_<ExactSupport>(m, "ExactSupport", "exact_support's result and option indices")
      .def_readonly("result", &ExactSupport::result)
      .def_readonly("options", &ExactSupport::options, "Option::index of each kept option, ascending");
  m.def("exact_support", &exact_support,
        "the options of every derivation scoring at least options.lower_bound (fstdecode.search.exact.support)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
}
