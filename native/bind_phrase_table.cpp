// The Python face of the core's table readers (phrase_table.h): `_core.read_phrase_table` and
// `_core.read_reordering_table` give a `_core.PhraseStore` / `_core.ReorderingStore`;
// `_core.SourceFilter` is the batch filter. A line the core refuses raises
// `_core.TableLineError(message, line, text, expected, first_line)` (fstdecode/io words it); a
// file it cannot read, `_core.TableFileError(message)`, worded. Reading releases the GIL (the
// keep and progress callbacks take it back).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "phrase_table.h"
#include "text_lines.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

py::tuple words_tuple(const PhraseStore& store, const std::int32_t* ids, int n) {
  py::tuple out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string& w = store.word(ids[i]);
    out[static_cast<std::size_t>(i)] = py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(w.data(), static_cast<Py_ssize_t>(w.size()), "strict"));
  }
  return out;
}

void check_handle(const PhraseStore& store, int h) {
  if (h < 0 || static_cast<std::size_t>(h) >= store.sources())
    throw py::index_error("source handle " + std::to_string(h) + " is not in the table");
}

// None, or the Python callable as a std::function (pybind takes the GIL to call it).
template <typename F>
F optional_function(const py::object& f) {
  return f.is_none() ? F() : f.cast<F>();
}

}  // namespace

void bind_phrase_table(py::module_& m) {
  static py::exception<TableLineError> line_error(m, "TableLineError", PyExc_ValueError);
  static py::exception<TextFileError> file_error(m, "TableFileError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TableLineError& e) {
      py::object text = py::reinterpret_steal<py::object>(
          PyBytes_FromStringAndSize(e.text.data(), static_cast<Py_ssize_t>(e.text.size())));
      py::tuple args = py::make_tuple(e.what(), e.line, text, e.expected, e.first_line);
      PyErr_SetObject(line_error.ptr(), args.ptr());
    } catch (const TextFileError& e) {
      PyErr_SetString(file_error.ptr(), e.what());
    }
  });

  py::class_<SourceFilter>(m, "SourceFilter",
                           "Which source phrases occur contiguously in a batch of tokenized sentences "
                           "(exact; fstdecode.io.table_filter.SourceFilter).")
      .def(py::init<std::vector<std::vector<std::string>>>(), py::arg("sentences"))
      .def(
          "__call__",
          [](SourceFilter& f, const std::vector<std::string>& source) {
            std::vector<std::string_view> views(source.begin(), source.end());
            return f.keeps(views);
          },
          py::arg("source"))
      .def("__len__", &SourceFilter::size)
      .def_property_readonly("indexed_length", &SourceFilter::indexed_length);

  py::class_<PhraseStore, std::shared_ptr<PhraseStore>>(
      m, "PhraseStore", "A phrase table read by the core: pairs grouped by source phrase (phrase_table.h).")
      .def_property_readonly("path", &PhraseStore::path)
      .def_property_readonly("num_scores", &PhraseStore::num_scores)
      .def_property_readonly("max_source_length", &PhraseStore::max_source_length)
      .def_property_readonly("runs", &PhraseStore::runs)
      .def_property_readonly("sources", &PhraseStore::sources)
      .def_property_readonly("pairs", &PhraseStore::pairs)
      .def_property_readonly("repeats",
                             [](const PhraseStore& s) -> py::object {
                               const Repeats& r = s.repeats();
                               if (!r.any) return py::none();
                               return py::make_tuple(r.count, r.other_scores, r.line, r.original, r.pair, r.differs);
                             },
                             "None, or (count, with other scores, line, original line, 'src ||| tgt', differs)")
      .def("find", &PhraseStore::find, "The handle of a source phrase, or -1.", py::arg("words"))
      .def("pair_count", [](const PhraseStore& s, int h) {
        check_handle(s, h);
        return s.pair_end(h) - s.pair_begin(h);
      }, py::arg("handle"))
      .def("source", [](const PhraseStore& s, int h) {
        check_handle(s, h);
        return py::tuple(py::cast(s.source_words(h)));
      }, py::arg("handle"))
      .def(
          "pairs_of",
          [](const PhraseStore& s, int h) {
            check_handle(s, h);
            py::list out;
            const int m = s.num_scores();
            for (int p = s.pair_begin(h); p < s.pair_end(h); ++p) {
              int n;
              const std::int32_t* ids = s.target(p, n);
              py::tuple scores(static_cast<std::size_t>(m));
              for (int k = 0; k < m; ++k) scores[static_cast<std::size_t>(k)] = py::float_(s.scores(p)[k]);
              out.append(py::make_tuple(words_tuple(s, ids, n), scores, s.alignment(p)));
            }
            return out;
          },
          "[(target words, scores, alignment)] of source `handle`, in store order", py::arg("handle"))
      .def(
          "limited",
          [](const PhraseStore& s, int limit, const LanguageModel& lm, const std::vector<double>& tm, double word,
             double lm_weight) {
            py::gil_scoped_release unlocked;
            return std::make_shared<PhraseStore>(s.limited(limit, lm, tm, word, lm_weight));
          },
          py::arg("limit"), py::arg("lm"), py::arg("tm"), py::arg("word"), py::arg("lm_weight"))
      .def(py::pickle([](const PhraseStore& s) { return py::bytes(s.serialize()); },
                      [](const py::bytes& b) {
                        return std::make_shared<PhraseStore>(PhraseStore::deserialize(std::string_view(b)));
                      }));

  py::class_<ReorderingStore, std::shared_ptr<ReorderingStore>>(
      m, "ReorderingStore", "A lexicalized reordering table read by the core (phrase_table.h).")
      .def_property_readonly("path", &ReorderingStore::path)
      .def_property_readonly("num_scores", &ReorderingStore::num_scores)
      .def_property_readonly("conditioned_on_target", &ReorderingStore::conditioned_on_target)
      .def("__len__", &ReorderingStore::size)
      .def(
          "lookup",
          [](const ReorderingStore& s, const std::vector<std::string>& source,
             const std::vector<std::string>& target) -> py::object {
            const double* row = s.find(source, target);
            if (row == nullptr) return py::none();
            py::tuple out(static_cast<std::size_t>(s.num_scores()));
            for (int k = 0; k < s.num_scores(); ++k) out[static_cast<std::size_t>(k)] = py::float_(row[k]);
            return out;
          },
          py::arg("source"), py::arg("target"))
      .def(py::pickle([](const ReorderingStore& s) { return py::bytes(s.serialize()); },
                      [](const py::bytes& b) {
                        return std::make_shared<ReorderingStore>(ReorderingStore::deserialize(std::string_view(b)));
                      }));

  m.def(
      "read_phrase_table",
      [](const std::string& path, int score_format, int num_features, SourceFilter* filter, const py::object& keep,
         const py::object& progress, std::size_t max_line, const std::string& too_long) {
        if (score_format < SCORE_PROB || score_format > SCORE_LOG10) throw py::value_error("score_format: 0, 1 or 2");
        const KeepSource k = optional_function<KeepSource>(keep);
        const Progress p = optional_function<Progress>(progress);
        py::gil_scoped_release unlocked;
        return std::make_shared<PhraseStore>(read_phrase_table(path, static_cast<ScoreFormat>(score_format), num_features,
                                                               filter, k, p, LineLimit{max_line, too_long}));
      },
      "Reads a Moses text phrase table (plain or gzip). score_format: 0 prob, 1 ln, 2 log10; "
      "num_features < 0: the first line's count; filter: a SourceFilter or None; keep: a predicate "
      "on source word lists or None; progress(bytes, lines) or None; a line longer than max_line "
      "bytes raises TableFileError('path:line' + too_long).",
      py::arg("path"), py::arg("score_format"), py::arg("num_features"), py::arg("filter"), py::arg("keep"),
      py::arg("progress"), py::arg("max_line"), py::arg("too_long"));

  m.def(
      "read_reordering_table",
      [](const std::string& path, int num_scores, bool conditioned_on_target, SourceFilter* filter,
         const py::object& keep, const py::object& progress, std::size_t max_line, const std::string& too_long) {
        const KeepSource k = optional_function<KeepSource>(keep);
        const Progress p = optional_function<Progress>(progress);
        py::gil_scoped_release unlocked;
        return std::make_shared<ReorderingStore>(read_reordering_table(path, num_scores, conditioned_on_target, filter,
                                                                       k, p, LineLimit{max_line, too_long}));
      },
      "Reads a Moses lexicalized reordering table (plain or gzip); num_scores < 0: the first line's; "
      "max_line, too_long: as read_phrase_table's.",
      py::arg("path"), py::arg("num_scores"), py::arg("conditioned_on_target"), py::arg("filter"), py::arg("keep"),
      py::arg("progress"), py::arg("max_line"), py::arg("too_long"));
}

}  // namespace fstdecode
