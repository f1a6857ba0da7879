// The Python face of KenLMBinary (kenlm_binary.h): `_core.KenLMBinary(path)`, registered by
// bindings.cpp's module definition after its base `_core.LanguageModel` (bind_language_model.cpp),
// so Problem and PhraseIndex take it. Queries take word ids (checked) or words (a str out of the
// vocabulary, or not encodable as UTF-8, is <unk>); KenLMFormatError becomes
// `_core.KenLMFormatError`, a ValueError. The queries (order, counts, index, logprob, backoff,
// extends, score_words, ...) are the base class's; this file adds what only a binary has.
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

void check_ids(const KenLMBinary& lm, const std::vector<WordId>& ids) {
  for (const WordId id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= lm.vocab_size())
      throw py::index_error("word id " + std::to_string(id) + " is not in the LM's vocabulary");
}

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
      .def_property_readonly("has_words", &KenLMBinary::has_words)
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
          "every word by id (<unk> first); empty when the file has no word list");
}

}  // namespace fstdecode
