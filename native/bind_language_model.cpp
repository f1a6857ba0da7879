// The Python face of LanguageModel (language_model.h) and RestrictedLM (restricted_lm.h):
// `_core.LanguageModel`, the base class of `_core.NgramLM` and `_core.KenLMBinary`, so that
// Problem and PhraseIndex take either; registered first by bindings.cpp's module definition.
//
// The base's queries work on any model (a subclass may override them with its own, e.g.
// NgramLM's ArpaLM-style word lookups): ids are checked; a word that is not a str, or a str out
// of the vocabulary or not encodable as UTF-8, is <unk>. `restrict(k)` gives a RestrictedLM that
// holds its base alive (shared_ptr), as the Python object of a Problem holds its LM.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "language_model.h"
#include "restricted_lm.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

WordId any_word_id(const LanguageModel& lm, py::handle item) {
  if (!PyUnicode_Check(item.ptr())) return lm.unk();
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return lm.unk();
  }
  return lm.index(std::string_view(utf8, static_cast<std::size_t>(size)));
}

std::vector<WordId> any_word_ids(const LanguageModel& lm, py::handle words) {
  if (PyUnicode_Check(words.ptr())) throw py::type_error("expected a sequence of words, not a str");
  std::vector<WordId> out;
  for (py::handle w : words) out.push_back(any_word_id(lm, w));
  return out;
}

void check_any_ids(const LanguageModel& lm, const std::vector<WordId>& ids) {
  for (const WordId id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= lm.vocab_size())
      throw py::index_error("word id " + std::to_string(id) + " is not in the LM's vocabulary");
}

int length(const std::vector<WordId>& v) { return static_cast<int>(v.size()); }

}  // namespace

void bind_language_model(py::module_& m) {
  py::class_<LanguageModel, std::shared_ptr<LanguageModel>>(
      m, "LanguageModel",
      "An n-gram LM the native searches score with (NgramLM, ImageLM, KenLMBinary, RestrictedLM); "
      "natural logs, word ids 0..vocab_size-1.")
      .def_property_readonly("order", &LanguageModel::order)
      .def_property_readonly("vocab_size", &LanguageModel::vocab_size)
      .def_property_readonly("unk", &LanguageModel::unk)
      .def_property_readonly("counts",
                             [](const LanguageModel& lm) {
                               py::tuple t(lm.counts().size());
                               for (std::size_t i = 0; i < lm.counts().size(); ++i) t[i] = py::int_(lm.counts()[i]);
                               return t;
                             })
      .def(
          "index", [](const LanguageModel& lm, py::handle word) { return any_word_id(lm, word); },
          "the id of a word (<unk>'s when out of vocabulary)", py::arg("word"))
      .def(
          "indices", [](const LanguageModel& lm, py::handle words) { return any_word_ids(lm, words); },
          py::arg("words"))
      .def(
          "logprob",
          [](const LanguageModel& lm, const std::vector<WordId>& context, WordId w) {
            check_any_ids(lm, context);
            check_any_ids(lm, {w});
            return lm.logprob(context.data(), length(context), w);
          },
          "ln p(w | context) over ids, the most recent word last", py::arg("context"), py::arg("w"))
      .def(
          "log10_float",
          [](const LanguageModel& lm, const std::vector<WordId>& context, WordId w) {
            check_any_ids(lm, context);
            check_any_ids(lm, {w});
            return lm.log10_float(context.data(), length(context), w);
          },
          "log10 p(w | context) as KenLM's FullScore gives it to Moses: a float, summed in float",
          py::arg("context"), py::arg("w"))
      .def(
          "unigram",
          [](const LanguageModel& lm, WordId w) {
            check_any_ids(lm, {w});
            return lm.unigram(w);
          },
          py::arg("w"))
      .def(
          "backoff",
          [](const LanguageModel& lm, const std::vector<WordId>& ids) {
            check_any_ids(lm, ids);
            return lm.backoff(ids.data(), length(ids));
          },
          "ln backoff of the n-gram of ids (0 when absent)", py::arg("ids"))
      .def(
          "extends",
          [](const LanguageModel& lm, const std::vector<WordId>& ids) {
            check_any_ids(lm, ids);
            return lm.extends(ids.data(), length(ids));
          },
          "the right-state test of the n-gram of ids (language_model.h)", py::arg("ids"))
      .def(
          "facts",
          [](const LanguageModel& lm, const std::vector<WordId>& ids) {
            check_any_ids(lm, ids);
            std::vector<double> out(ids.size());
            lm.facts(ids.data(), length(ids), out.data());
            return out;
          },
          "the backoffs of the suffixes of the n-gram of ids, by length (language_model.h)", py::arg("ids"))
      .def(
          "logprob_facts",
          [](const LanguageModel& lm, const std::vector<WordId>& context, WordId w, const std::vector<double>& facts) {
            check_any_ids(lm, context);
            check_any_ids(lm, {w});
            if (facts.size() != context.size())
              throw py::value_error("logprob_facts: " + std::to_string(facts.size()) + " facts for a context of " +
                                    std::to_string(context.size()) + " words");
            std::vector<double> backoffs(context.size() + 1);
            std::vector<std::uint8_t> extends(context.size() + 1);
            const NextFacts next{backoffs.data(), extends.data()};
            const double v = lm.logprob_facts(context.data(), length(context), w, facts.data(), &next);
            std::vector<bool> ext(extends.begin(), extends.end());
            return py::make_tuple(v, backoffs, ext);
          },
          "(ln p(w | context) from the context's facts, the backoffs and the right-state tests of the "
          "suffixes of context + w by length) (language_model.h)",
          py::arg("context"), py::arg("w"), py::arg("facts"))
      .def(
          "logprob_words",
          [](const LanguageModel& lm, py::handle context, py::handle word) {
            const std::vector<WordId> ctx = any_word_ids(lm, context);
            return lm.logprob(ctx.data(), length(ctx), any_word_id(lm, word));
          },
          py::arg("context"), py::arg("word"))
      .def(
          "backoff_words",
          [](const LanguageModel& lm, py::handle context) {
            const std::vector<WordId> ids = any_word_ids(lm, context);
            return lm.backoff(ids.data(), length(ids));
          },
          py::arg("context"))
      .def(
          "extends_words",
          [](const LanguageModel& lm, py::handle context) {
            const std::vector<WordId> ids = any_word_ids(lm, context);
            return lm.extends(ids.data(), length(ids));
          },
          py::arg("context"))
      .def(
          "score_words",
          [](const LanguageModel& lm, py::handle words, bool bos, bool eos) {
            std::vector<WordId> seq;
            if (bos) seq.push_back(lm.index("<s>"));
            const std::size_t start = seq.size();
            for (const WordId id : any_word_ids(lm, words)) seq.push_back(id);
            if (eos) seq.push_back(lm.index("</s>"));
            py::list out;
            for (std::size_t i = start; i < seq.size(); ++i)
              out.append(lm.logprob(seq.data(), static_cast<int>(i), seq[i]));
            return out;
          },
          "ln p of each word of [<s>] words [</s>] given all before it (<s> is context only)",
          py::arg("words"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "restrict",
          [](std::shared_ptr<LanguageModel> lm, int order) -> std::shared_ptr<LanguageModel> {
            if (order < 1 || order > lm->order())
              throw py::value_error("cannot restrict an order-" + std::to_string(lm->order()) +
                                    " model to order " + std::to_string(order));
            if (order == lm->order()) return lm;
            return std::make_shared<RestrictedLM>(std::move(lm), order);
          },
          "the model read up to `order` (restricted_lm.h); itself at its own order", py::arg("order"));

  py::class_<RestrictedLM, LanguageModel, std::shared_ptr<RestrictedLM>>(
      m, "RestrictedLM", "A LanguageModel read up to a lower order (restricted_lm.h); made by restrict().")
      .def_property_readonly("base", [](const RestrictedLM& lm) { return &lm.base(); },
                             py::return_value_policy::reference_internal);
}

}  // namespace fstdecode
