// The Python face of Moses' own binary tables (moses_binary_table.h): `_core.MosesPhraseTable(prefix)`
// and `_core.MosesReorderingTable(prefix)` (mapped; phrases()/reordering() give the stores a
// batch's filter keeps, as a BinaryTable's do; each pickles as its prefix, so forked and Dask
// workers map the same pages), and `_core.MosesBinaryError` (a BinaryFormatError, so a ValueError), one line naming the file.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "moses_binary_table.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

template <typename Table>
std::shared_ptr<Table> open_table(const std::string& prefix) {
  py::gil_scoped_release unlocked;
  try {
    return std::make_shared<Table>(prefix);
  } catch (const MappedFileError& e) {  // a file missing or unreadable (its message names it)
    throw MosesBinaryError(e.what());
  }
}

template <typename F>
F optional_function(const py::object& f) {
  return f.is_none() ? F() : f.cast<F>();
}

}  // namespace

void bind_moses_binary_table(py::module_& m) {
  // A subclass of BinaryFormatError (bind_binary_table.cpp, bound first): the readers that look a
  // mapped table up catch that one for either kind of binary table.
  py::register_exception<MosesBinaryError>(m, "MosesBinaryError", m.attr("BinaryFormatError"));

  py::class_<MosesPhraseTable, std::shared_ptr<MosesPhraseTable>>(
      m, "MosesPhraseTable", "Moses' binary phrase table PREFIX.binphr.* (processPhraseTable), memory-mapped.")
      .def(py::init(&open_table<MosesPhraseTable>), py::arg("prefix"))
      .def_property_readonly("path", &MosesPhraseTable::path)
      .def_property_readonly("num_scores", &MosesPhraseTable::num_scores)
      .def_property_readonly("has_alignment", &MosesPhraseTable::has_alignment)
      .def_property_readonly("factors", &MosesPhraseTable::factors,
                             "the number of factors of the first record's target words (1: surface words)")
      .def_property_readonly("factored_word", &MosesPhraseTable::factored_word, "one such word ('' for 1 factor)")
      .def_property_readonly(
          "sources",
          [](const MosesPhraseTable& t) {
            py::gil_scoped_release unlocked;
            return t.sources();
          },
          "the number of source phrases (a walk of the whole tree, once)")
      .def(
          "phrases",
          [](const MosesPhraseTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = optional_function<KeepSource>(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<PhraseStore>(t.phrases(filter, k));
          },
          py::arg("filter"), py::arg("keep"))
      .def(py::pickle([](const MosesPhraseTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) { return open_table<MosesPhraseTable>(state[0].cast<std::string>()); }));

  py::class_<MosesReorderingTable, std::shared_ptr<MosesReorderingTable>>(
      m, "MosesReorderingTable",
      "Moses' binary lexicalized reordering table PREFIX.binlexr.* (processLexicalTable), memory-mapped.")
      .def(py::init(&open_table<MosesReorderingTable>), py::arg("prefix"))
      .def_property_readonly("path", &MosesReorderingTable::path)
      .def_property_readonly("num_scores", &MosesReorderingTable::num_scores)
      .def_property_readonly("conditioned_on_target", &MosesReorderingTable::conditioned_on_target)
      .def(
          "reordering",
          [](const MosesReorderingTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = optional_function<KeepSource>(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<ReorderingStore>(t.reordering(filter, k));
          },
          py::arg("filter"), py::arg("keep"))
      .def(py::pickle([](const MosesReorderingTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) { return open_table<MosesReorderingTable>(state[0].cast<std::string>()); }));
}

}  // namespace fstdecode
