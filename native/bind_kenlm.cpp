// The Python face of KenLMBinary (kenlm_binary.h): `_core.KenLMBinary(path)`, registered by
// bindings.cpp's module definition after its base `_core.LanguageModel` (bind_language_model.cpp),
// so Problem and PhraseIndex take it. Queries take word ids (checked) or words (a str out of the
// vocabulary, or not encodable as UTF-8, is <unk>); KenLMFormatError becomes
// `_core.KenLMFormatError`, a ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "kenlm_binary.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

WordId binary_word_id(const KenLMBinary& lm, py::handle item) {
  if (!PyUnicode_Check(item.ptr())) return lm.unk();
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return lm.unk();
  }
  return lm.index(std::string_view(utf8, static_cast<std::size_t>(size)));
}

std::vector<WordId> binary_word_ids(const KenLMBinary& lm, py::handle words) {
  if (PyUnicode_Check(words.ptr())) throw py::type_error("expected a sequence of words, not a str");
  std::vector<WordId> out;
  for (py::handle w : words) out.push_back(binary_word_id(lm, w));
  return out;
}

void check_ids(const KenLMBinary& lm, const std::vector<WordId>& ids) {
  for (const WordId id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= lm.vocab_size())
      throw py::index_error("word id " + std::to_string(id) + " is not in the LM's vocabulary");
}

int size_of(const std::vector<WordId>& v) { return static_cast<int>(v.size()); }

}  // namespace

void bind_kenlm(py::module_& m) {
  py::register_exception<KenLMFormatError>(m, "KenLMFormatError", PyExc_ValueError);

  py::class_<KenLMBinary, LanguageModel, std::shared_ptr<KenLMBinary>>(
      m, "KenLMBinary",
      "A KenLM binary LM (probing or plain trie) read natively by mmap; NgramLM's queries in "
      "natural logs. Word ids are 0..vocab_size-1, <unk> = 0.")
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release unlocked;
             return std::make_shared<KenLMBinary>(path);
           }),
           py::arg("path"))
      .def_property_readonly("path", &KenLMBinary::path)
      .def_property_readonly("kind",
                             [](const KenLMBinary& lm) {
                               return lm.kind() == KenLMBinary::Kind::kProbing ? "probing" : "trie";
                             })
      .def_property_readonly("order", &KenLMBinary::order)
      .def_property_readonly("counts",
                             [](const KenLMBinary& lm) {
                               py::tuple t(lm.counts().size());
                               for (std::size_t i = 0; i < lm.counts().size(); ++i) t[i] = py::int_(lm.counts()[i]);
                               return t;
                             })
      .def_property_readonly("vocab_size", &KenLMBinary::vocab_size)
      .def_property_readonly("unk", &KenLMBinary::unk)
      .def_property_readonly("has_words", &KenLMBinary::has_words)
      .def(
          "index", [](const KenLMBinary& lm, py::handle word) { return binary_word_id(lm, word); },
          "the id of a word (<unk>'s, 0, when out of vocabulary)", py::arg("word"))
      .def(
          "indices", [](const KenLMBinary& lm, py::handle words) { return binary_word_ids(lm, words); },
          py::arg("words"))
      .def(
          "word",
          [](const KenLMBinary& lm, WordId id) {
            check_ids(lm, {id});
            if (!lm.has_words()) throw py::value_error(lm.path() + ": this binary was built without its words");
            const std::string_view w = lm.word(id);
            return py::str(w.data(), w.size());
          },
          py::arg("id"))
      .def(
          "words",
          [](const KenLMBinary& lm) {
            py::list out;
            if (!lm.has_words()) return out;
            for (std::size_t i = 0; i < lm.vocab_size(); ++i) {
              const std::string_view w = lm.word(static_cast<WordId>(i));
              // Invalid UTF-8 is replaced, as the Python reader's decode(errors="replace").
              out.append(py::reinterpret_steal<py::object>(
                  PyUnicode_DecodeUTF8(w.data(), static_cast<Py_ssize_t>(w.size()), "replace")));
            }
            return out;
          },
          "every word by id (<unk> first); empty when the file has no word list")
      .def(
          "logprob",
          [](const KenLMBinary& lm, const std::vector<WordId>& context, WordId w) {
            check_ids(lm, context);
            check_ids(lm, {w});
            return lm.logprob(context.data(), size_of(context), w);
          },
          "ln p(w | context) over ids, the most recent word last", py::arg("context"), py::arg("w"))
      .def(
          "unigram",
          [](const KenLMBinary& lm, WordId w) {
            check_ids(lm, {w});
            return lm.unigram(w);
          },
          py::arg("w"))
      .def(
          "backoff",
          [](const KenLMBinary& lm, const std::vector<WordId>& ids) {
            check_ids(lm, ids);
            return lm.backoff(ids.data(), size_of(ids));
          },
          "ln backoff of the n-gram of ids (0 when absent)", py::arg("ids"))
      .def(
          "extends",
          [](const KenLMBinary& lm, const std::vector<WordId>& ids) {
            check_ids(lm, ids);
            return lm.extends(ids.data(), size_of(ids));
          },
          "KenLM's right-state test of the n-gram of ids (see kenlm_binary.h)", py::arg("ids"))
      .def(
          "logprob_words",
          [](const KenLMBinary& lm, py::handle context, py::handle word) {
            const std::vector<WordId> ctx = binary_word_ids(lm, context);
            return lm.logprob(ctx.data(), size_of(ctx), binary_word_id(lm, word));
          },
          py::arg("context"), py::arg("word"))
      .def(
          "score_words",
          [](const KenLMBinary& lm, py::handle words, bool bos, bool eos) {
            std::vector<WordId> seq;
            if (bos) seq.push_back(lm.index("<s>"));
            const std::size_t start = seq.size();
            for (const WordId id : binary_word_ids(lm, words)) seq.push_back(id);
            if (eos) seq.push_back(lm.index("</s>"));
            py::list out;
            for (std::size_t i = start; i < seq.size(); ++i)
              out.append(lm.logprob(seq.data(), static_cast<int>(i), seq[i]));
            return out;
          },
          "ln p of each word of [<s>] words [</s>] given all before it (<s> is context only)",
          py::arg("words"), py::arg("bos") = true, py::arg("eos") = true);
}

}  // namespace fstdecode
