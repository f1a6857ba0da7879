// The Python face of NgramLM (lm.h) and ImageLM (lm_image.h): `_core.NgramLM` and
// `_core.ImageLM`, `_core.LanguageModel`s (registered after bind_language_model.cpp's base)
// with the same queries, and ArpaFormatError and LmImageError as ValueErrors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "lm.h"
#include "lm_image.h"
#include "lm_value_code.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

// Word arguments follow ArpaLM's dict lookups: a str not in the vocabulary (or not encodable
// as UTF-8) and any other hashable object are <unk>; an unhashable one raises TypeError.
template <class LM>
struct LmArgs {
  static WordId word_id(const LM& lm, PyObject* item) {
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
  static void word_ids(const LM& lm, py::handle words, std::vector<WordId>& out, Py_ssize_t keep = -1) {
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
  static void checked_ids(const LM& lm, const std::vector<WordId>& ids) {
    for (const WordId id : ids) checked_id(lm, id);
  }
  static void checked_id(const LM& lm, WordId id) {
    if (id < 0 || static_cast<std::size_t>(id) >= lm.vocab().size())
      throw py::index_error("word id " + std::to_string(id) + " is not in the LM's vocabulary");
  }
  static void not_str(py::handle h, const char* what) {
    if (PyUnicode_Check(h.ptr())) throw py::type_error(std::string(what) + " must be a sequence of words, not a str");
  }
  // ArpaLM._score_span: sum of ln p(seq[i] | seq[:i]) for i >= start.
  static double span(const LM& lm, const std::vector<WordId>& seq, std::size_t start) {
    const std::size_t n = static_cast<std::size_t>(lm.order() - 1);
    double total = 0.0;
    for (std::size_t i = start; i < seq.size(); ++i) {
      const std::size_t lo = i > n ? i - n : 0;
      total += lm.logprob(seq.data() + lo, static_cast<int>(i - lo), seq[i]);
    }
    return total;
  }
};

// The queries NgramLM and ImageLM (lm_image.h) share, as ArpaLM's methods.
template <class LM, class Cls>
void def_queries(Cls& cls) {
  using Args = LmArgs<LM>;
  cls.def_property_readonly("order", &LM::order)
      .def_property_readonly(
          "counts",
          [](const LM& lm) {
            py::tuple t(lm.counts().size());
            for (std::size_t i = 0; i < lm.counts().size(); ++i) t[i] = py::int_(lm.counts()[i]);
            return t;
          },
          "the \\data\\ count of each kept order")
      .def_property_readonly("vocab_size", [](const LM& lm) { return lm.vocab().size(); })
      .def_property_readonly("unk", &LM::unk, "the id of <unk>")
      // ---- ids
      .def(
          "index", [](const LM& lm, py::handle word) { return Args::word_id(lm, word.ptr()); },
          "the id of a word (<unk>'s when out of vocabulary)", py::arg("word"))
      .def(
          "indices",
          [](const LM& lm, py::handle words) {
            std::vector<WordId> ids;
            Args::word_ids(lm, words, ids);
            return ids;
          },
          "index() of each word", py::arg("words"))
      .def(
          "word",
          [](const LM& lm, WordId id) {
            Args::checked_id(lm, id);
            return py::str(lm.vocab().word(id));
          },
          "the word of an id", py::arg("id"))
      .def(
          "words",
          [](const LM& lm) {
            py::list out(lm.vocab().size());
            for (std::size_t i = 0; i < lm.vocab().size(); ++i)
              out[i] = py::str(lm.vocab().word(static_cast<WordId>(i)));
            return out;
          },
          "every word, by id (<unk> included; not the alias <UNK>)")
      .def(
          "contains",
          [](const LM& lm, py::handle word) {
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
          [](const LM& lm, const std::vector<WordId>& context, WordId w) {
            Args::checked_ids(lm, context);
            Args::checked_id(lm, w);
            return lm.logprob(context.data(), static_cast<int>(context.size()), w);
          },
          "ln p(w | context) over ids, the most recent word last", py::arg("context"), py::arg("w"))
      .def(
          "backoff",
          [](const LM& lm, const std::vector<WordId>& ids) {
            Args::checked_ids(lm, ids);
            return lm.backoff(ids.data(), static_cast<int>(ids.size()));
          },
          "ln backoff of the n-gram of ids (0 when absent)", py::arg("ids"))
      .def(
          "extends",
          [](const LM& lm, const std::vector<WordId>& ids) {
            Args::checked_ids(lm, ids);
            return lm.extends(ids.data(), static_cast<int>(ids.size()));
          },
          "True iff a stored longer n-gram starts with the ids", py::arg("ids"))
      // ---- words (ArpaLM's methods; out-of-vocabulary words are <unk>)
      .def(
          "logprob_words",
          [](const LM& lm, py::handle context, py::handle word) {
            Args::not_str(context, "context");
            std::vector<WordId> ctx;
            if (lm.order() > 1) {
              const int nonempty = PyObject_IsTrue(context.ptr());
              if (nonempty < 0) throw py::error_already_set();
              if (nonempty) Args::word_ids(lm, context, ctx, lm.order() - 1);
            }
            const WordId w = Args::word_id(lm, word.ptr());
            return lm.logprob(ctx.data(), static_cast<int>(ctx.size()), w);
          },
          "ArpaLM.logprob", py::arg("context"), py::arg("word"))
      .def(
          "backoff_words",
          [](const LM& lm, py::handle context) {
            std::vector<WordId> ids;
            Args::word_ids(lm, context, ids);
            return lm.backoff(ids.data(), static_cast<int>(ids.size()));
          },
          "ArpaLM.backoff", py::arg("context"))
      .def(
          "extends_words",
          [](const LM& lm, py::handle context) {
            std::vector<WordId> ids;
            Args::word_ids(lm, context, ids);
            return lm.extends(ids.data(), static_cast<int>(ids.size()));
          },
          "ArpaLM.extends", py::arg("context"))
      .def(
          "score_sentence",
          [](const LM& lm, py::handle words, bool bos, bool eos) {
            Args::not_str(words, "words");
            std::vector<WordId> body;
            Args::word_ids(lm, words, body);
            std::vector<WordId> seq;
            seq.reserve(body.size() + 2);
            if (bos) seq.push_back(lm.index("<s>"));
            seq.insert(seq.end(), body.begin(), body.end());
            if (eos) seq.push_back(lm.index("</s>"));
            return Args::span(lm, seq, bos ? 1 : 0);
          },
          "ArpaLM.score_sentence", py::arg("words"), py::arg("bos") = true, py::arg("eos") = true)
      .def(
          "phrase_estimate",
          [](const LM& lm, py::handle words) {
            Args::not_str(words, "words");
            auto fast = py::reinterpret_steal<py::object>(PySequence_Fast(words.ptr(), "expected a sequence of words"));
            if (!fast) throw py::error_already_set();
            std::vector<WordId> seq;
            Args::word_ids(lm, fast, seq);
            std::size_t start = 0;
            if (!seq.empty()) {
              const int first_is_bos = PyObject_RichCompareBool(PySequence_Fast_GET_ITEM(fast.ptr(), 0),
                                                                py::str("<s>").ptr(), Py_EQ);
              if (first_is_bos < 0) throw py::error_already_set();
              start = first_is_bos ? 1 : 0;
            }
            return Args::span(lm, seq, start);
          },
          "ArpaLM.phrase_estimate", py::arg("words"))
      .def(
          "unigram_logprob",
          [](const LM& lm, py::handle word) {
            return lm.unigram(Args::word_id(lm, word.ptr()));
          },
          "ArpaLM.unigram_logprob", py::arg("word"))
      .def(
          "spelling",
          [](const LM& lm, py::handle word) {
            return py::str(lm.vocab().word(Args::word_id(lm, word.ptr())));
          },
          "ArpaLM.word: the word itself if in the vocabulary, else <unk>", py::arg("word"));
}

}  // namespace

void bind_lm(py::module_& m) {
  py::register_exception<ArpaFormatError>(m, "ArpaFormatError", PyExc_ValueError);
  py::register_exception<LmImageError>(m, "LmImageError", PyExc_ValueError);
  m.attr("LM_IMAGE_VERSION") = kLmImageVersion;
  m.def("is_lm_image", &is_lm_image, "Whether a file starts with the LM image magic.", py::arg("path"));
  m.def(
      "lm_value_code",
      [](double v) -> py::object {
        std::uint32_t code = 0;
        if (!value_code::encode(v, &code)) return py::none();
        return py::int_(code);
      },
      "The 32-bit decimal code (lm_value_code.h) of a natural-log score, or None when none decodes to "
      "it exactly.",
      py::arg("value"));
  m.def(
      "lm_value_decode",
      [](std::uint32_t code) {
        if (value_code::is_escape(code)) throw py::value_error("an escape code has no value of its own");
        return value_code::decode(code);
      },
      "The natural-log score of a decimal code (not an escape).", py::arg("code"));

  py::class_<NgramLM, LanguageModel, std::shared_ptr<NgramLM>> ngram(
      m, "NgramLM",
      "A back-off n-gram LM read from ARPA text with KenLM's semantics (fstdecode.io.arpa.ArpaLM, "
      "value for value); scores are natural logs. Words are interned to ids 0..vocab_size-1.");
  ngram
      .def_property_readonly("suffix_closed", &NgramLM::suffix_closed,
                             "every stored n-gram's suffix is stored: queries look their orders up shortest first")
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
      .def(
          "write_image",
          [](const NgramLM& lm, const std::string& source, std::int64_t size, std::int64_t mtime_ns,
             const std::string& path) {
            py::gil_scoped_release unlocked;
            LmImage::write(lm, SourceStamp{source, size, mtime_ns}, path);
          },
          "Writes the model as an LM image (lm_image.h).", py::arg("source"), py::arg("size"), py::arg("mtime_ns"),
          py::arg("path"))
      .def(
          "restrict",
          [](const NgramLM& lm, int order) {
            if (order < 1 || order > lm.order())
              throw py::value_error("cannot restrict an order-" + std::to_string(lm.order()) +
                                    " model to order " + std::to_string(order));
            return std::make_shared<NgramLM>(lm.restrict(order));
          },
          "the model up to `order`, as parse_arpa(text, order) reads it", py::arg("order"));
  def_queries<NgramLM>(ngram);

  py::class_<ImageLM, LanguageModel, std::shared_ptr<ImageLM>> image(
      m, "ImageLM",
      "An LM image (fstdecode binarize; lm_image.h) mapped: NgramLM's queries, answered bit for bit "
      "as the NgramLM it was written from.");
  image
      .def_property_readonly("suffix_closed", &ImageLM::suffix_closed,
                             "the image's flag (NgramLM.suffix_closed of its source; False for a version 2 image)")
      .def_static(
          "map_image",
          [](const std::string& path) {
            SourceStamp stamp;
            std::shared_ptr<ImageLM> lm;
            {
              py::gil_scoped_release unlocked;
              lm = ImageLM::map(path, &stamp);
            }
            return py::make_tuple(lm, py::make_tuple(stamp.path, stamp.size, stamp.mtime_ns));
          },
          "(ImageLM, (source path, size, mtime_ns)): an LM image (lm_image.h) mapped", py::arg("path"))
      .def(
          "restrict",
          [](const ImageLM& lm, int order) {
            if (order < 1 || order > lm.order())
              throw py::value_error("cannot restrict an order-" + std::to_string(lm.order()) +
                                    " model to order " + std::to_string(order));
            return lm.restrict(order);
          },
          "the model up to `order`, as NgramLM.restrict (the same mapping)", py::arg("order"));
  def_queries<ImageLM>(image);
}

}  // namespace fstdecode
