// The Python face of Problem, Hypothesis and Result (problem.h): `_core.Problem` takes a
// `_core.LanguageModel`, so it is registered after the LMs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bindings.h"
#include "language_model.h"
#include "moses_float.h"
#include "problem.h"

namespace py = pybind11;

namespace fstdecode {

void bind_problem(py::module_& m) {
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
      .def_property("lm_facts", &Problem::lm_facts, &Problem::set_lm_facts,
                    "the <s>-tape joins score with KenLM-style right states (True, the default) or with "
                    "ngram and trim (False); the results are the same")
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
          "the LM id of each problem id")
      // Moses' n-best arithmetic (moses_float.h): the options' own values, by option id.
      .def("set_moses_scores", &set_moses_scores,
           "after finish(): each option's phrase-table scores (natural logs, id * num_tm + k) and "
           "whether it is an unknown word's copy (one flag per option id)",
           py::arg("num_tm"), py::arg("ln_scores"), py::arg("unknown"))
      .def("set_moses_words", &set_moses_words, "the text of each problem word id", py::arg("words"))
      .def("set_moses_reordering", &set_moses_reordering,
           "after finish(): each option's reordering row (id * width + c) and its kind (0: none, 1: "
           "the table's natural logs, 2: default-scores)",
           py::arg("width"), py::arg("values"), py::arg("kinds"))
      .def("set_moses_alignment", &set_moses_alignment,
           "after finish(): each option's word alignment, points[offsets[id]:offsets[id + 1]] as "
           "(source, target) pairs flattened", py::arg("offsets"), py::arg("points"));

  py::class_<Hypothesis>(m, "Hypothesis")
      .def_readonly("score", &Hypothesis::score)
      .def_readonly("options", &Hypothesis::options,
                    "the Python indices (add_option's index) of its options in target order")
      .def_readonly("winners", &Hypothesis::winners,
                    "the stack decoder with nbest > 1: per option, [] where the hypothesis ending with it "
                    "(extending the previous option's recombination winner) won its recombination, else "
                    "the winner's options (Moses' TrellisPath arithmetic); else empty");

  py::class_<Result>(m, "Result")
      .def_readonly("hypotheses", &Result::hypotheses, "best first")
      .def_property_readonly("size", [](const Result& r) { return r.hypotheses.size(); },
                             "the number of hypotheses (without copying them, as hypotheses does)")
      .def(
          "hypothesis",
          [](const Result& r, std::size_t i) {
            if (i >= r.hypotheses.size()) throw py::index_error("no such hypothesis");
            return r.hypotheses[i];
          },
          "a copy of hypothesis i alone", py::arg("i"))
      .def_readonly("optimal", &Result::optimal)
      .def_readonly("states", &Result::states)
      .def_readonly("transitions", &Result::transitions)
      .def_readonly("status", &Result::status, "'' (finished), 'budget' or 'none'")
      .def_readonly("message", &Result::message)
      .def_readonly("upper_bound", &Result::upper_bound, "a bound on every derivation's score (NaN: none)")
      .def_readonly("root_bound", &Result::root_bound, "the A*'s bound before it expands anything (NaN: none)")
      .def_readonly("lower_seconds", &Result::lower_seconds, "exact_decode: seconds of the stack decoder's lower bound")
      .def_readonly("bounds_seconds", &Result::bounds_seconds, "the A*: seconds building the heuristic's tables")
      .def_readonly("search_seconds", &Result::search_seconds, "the A*: seconds of expansion");
}

}  // namespace fstdecode
