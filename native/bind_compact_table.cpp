// The Python face of Moses' compact tables (compact_table.h): `_core.CompactPhraseTable(path)`
// and `_core.CompactReorderingTable(path)` (mapped; phrases(filter, keep) / reordering(pairs)
// give the stores of a batch; each pickles as its path, so forked and Dask workers map the same
// pages), and `_core.CompactFormatError` (a BinaryFormatError, so a ValueError), one line naming the file.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "compact_table.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

template <typename Table>
std::shared_ptr<Table> open_compact(const std::string& path) {
  py::gil_scoped_release unlocked;
  return std::make_shared<Table>(path);
}

}  // namespace

void bind_compact_table(py::module_& m) {
  py::register_exception<CompactFormatError>(m, "CompactFormatError", m.attr("BinaryFormatError"));  // (a ValueError)

  py::class_<CompactPhraseTable, std::shared_ptr<CompactPhraseTable>>(
      m, "CompactPhraseTable", "Moses' compact phrase table (.minphr), memory-mapped (compact_table.h).")
      .def(py::init(&open_compact<CompactPhraseTable>), py::arg("path"))
      .def_property_readonly("path", &CompactPhraseTable::path)
      .def_property_readonly("num_scores", &CompactPhraseTable::num_scores)
      .def_property_readonly("max_source_length", &CompactPhraseTable::max_source_length)
      .def_property_readonly("sources", &CompactPhraseTable::sources)
      .def_property_readonly("has_alignments", &CompactPhraseTable::has_alignments)
      .def(
          "phrases",
          [](const CompactPhraseTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = keep.is_none() ? KeepSource() : keep.cast<KeepSource>();
            py::gil_scoped_release unlocked;
            return std::make_shared<PhraseStore>(t.phrases(filter, k));
          },
          "The PhraseStore of the sources the filter keeps (and keep accepts).", py::arg("filter"), py::arg("keep"))
      .def(py::pickle([](const CompactPhraseTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) { return open_compact<CompactPhraseTable>(state[0].cast<std::string>()); }));

  py::class_<CompactReorderingTable, std::shared_ptr<CompactReorderingTable>>(
      m, "CompactReorderingTable", "Moses' compact reordering table (.minlexr), memory-mapped (compact_table.h).")
      .def(py::init(&open_compact<CompactReorderingTable>), py::arg("path"))
      .def_property_readonly("path", &CompactReorderingTable::path)
      .def_property_readonly("num_scores", &CompactReorderingTable::num_scores)
      .def_property_readonly("conditioned_on_target", &CompactReorderingTable::conditioned_on_target)
      .def("__len__", &CompactReorderingTable::size)
      .def(
          "lookup",
          [](const CompactReorderingTable& t, const std::vector<std::string>& source,
             const std::vector<std::string>& target) -> py::object {
            std::vector<double> row;
            bool found;
            {
              const std::vector<std::string_view> s(source.begin(), source.end()), e(target.begin(), target.end());
              py::gil_scoped_release unlocked;
              found = t.lookup(s, e, row);
            }
            return found ? py::object(py::tuple(py::cast(row))) : py::object(py::none());
          },
          "The row of (source, target) (target ignored for an f table), or None.", py::arg("source"), py::arg("target"))
      .def(
          "reordering",
          [](const CompactReorderingTable& t, const PhraseStore& pairs) {
            py::gil_scoped_release unlocked;
            return std::make_shared<ReorderingStore>(t.reordering(pairs));
          },
          "The ReorderingStore of the (source, target) pairs of a PhraseStore that the table holds.",
          py::arg("pairs"))
      .def(py::pickle([](const CompactReorderingTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) {
                        return open_compact<CompactReorderingTable>(state[0].cast<std::string>());
                      }));
}

}  // namespace fstdecode
