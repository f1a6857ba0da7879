// The Python face of Moses' ProbingPT tables (probing_table.h): `_core.ProbingTable(folder)`
// (mapped and checked; its phrases()/reordering() give the stores a batch's filter keeps, with the
// same signatures as BinaryTable's, so a model's mapped tables are looked up alike; it pickles as
// its folder, so forked and Dask workers map the same pages). Errors are `_core.BinaryFormatError`
// (bind_binary_table.cpp), one line naming the file.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "probing_table.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

std::shared_ptr<ProbingTable> open_probing(const std::string& folder) {
  py::gil_scoped_release unlocked;
  return std::make_shared<ProbingTable>(folder);
}

KeepSource keep_of(const py::object& keep) { return keep.is_none() ? KeepSource() : keep.cast<KeepSource>(); }

}  // namespace

void bind_probing_table(py::module_& m) {
  m.attr("PROBING_API_VERSION") = kProbingApiVersion;
  py::class_<ProbingTable, std::shared_ptr<ProbingTable>>(
      m, "ProbingTable", "A Moses ProbingPT folder (API_VERSION 15), memory-mapped (probing_table.h).")
      .def(py::init(&open_probing), py::arg("folder"))
      .def_property_readonly("path", &ProbingTable::path)
      .def_property_readonly("num_scores", &ProbingTable::num_scores)
      .def_property_readonly("num_lex_scores", &ProbingTable::num_lex_scores)
      .def_property_readonly("log_prob", &ProbingTable::log_prob)
      .def_property_readonly("sources", &ProbingTable::sources, "config's uniq_entries")
      .def(
          "phrases",
          [](const ProbingTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = keep_of(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<PhraseStore>(t.phrases(filter, k));
          },
          py::arg("filter"), py::arg("keep"))
      .def(
          "reordering",
          [](const ProbingTable& t, SourceFilter* filter, const py::object& keep, int property_index) {
            const KeepSource k = keep_of(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<ReorderingStore>(t.reordering(filter, k, property_index));
          },
          py::arg("filter"), py::arg("keep"), py::arg("property_index") = 0)
      .def(py::pickle([](const ProbingTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) { return open_probing(state[0].cast<std::string>()); }));
}

}  // namespace fstdecode
