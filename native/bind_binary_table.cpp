// The Python face of binarized tables (binary_table.h): `_core.BinaryTable(path)` (mapped; its
// phrases()/reordering() give the stores a batch's filter keeps; it pickles as its path, so
// forked and Dask workers map the same pages), `_core.write_binary_table`, and
// `_core.BinaryFormatError` (a ValueError), one line naming the file.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "binary_table.h"
#include "bindings.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

std::shared_ptr<BinaryTable> open_table(const std::string& path) {
  py::gil_scoped_release unlocked;
  try {
    return std::make_shared<BinaryTable>(path);
  } catch (const BinaryFormatError&) {
    throw;
  } catch (const std::runtime_error& e) {  // the mapping itself (no such file, ...)
    throw BinaryFormatError(e.what());
  }
}

template <typename F>
F optional_function(const py::object& f) {
  return f.is_none() ? F() : f.cast<F>();
}

}  // namespace

void bind_binary_table(py::module_& m) {
  py::register_exception<BinaryFormatError>(m, "BinaryFormatError", PyExc_ValueError);
  m.attr("BINARY_TABLE_VERSION") = kBinaryTableVersion;
  m.def("is_binary_table", &is_binary_table, "Whether a file starts with the binarized table magic.", py::arg("path"));

  py::class_<BinaryTable, std::shared_ptr<BinaryTable>>(
      m, "BinaryTable", "A binarized phrase or reordering table, memory-mapped (binary_table.h).")
      .def(py::init(&open_table), py::arg("path"))
      .def_property_readonly("path", &BinaryTable::path)
      .def_property_readonly("kind",
                             [](const BinaryTable& t) {
                               return t.kind() == BINARY_PHRASES ? "phrases"
                                      : t.kind() == BINARY_REORDERING_FE ? "reordering-fe"
                                                                          : "reordering-f";
                             })
      .def_property_readonly("num_scores", &BinaryTable::num_scores)
      .def_property_readonly("max_source_length", &BinaryTable::max_source_length)
      .def_property_readonly("sources", &BinaryTable::sources)
      .def_property_readonly("entries", &BinaryTable::entries)
      .def_property_readonly(
          "stamp", [](const BinaryTable& t) { return py::make_tuple(t.stamp().path, t.stamp().size, t.stamp().mtime_ns); },
          "(path, size, mtime_ns) of the text file it was built from, as it was then")
      .def(
          "phrases",
          [](const BinaryTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = optional_function<KeepSource>(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<PhraseStore>(t.phrases(filter, k));
          },
          py::arg("filter"), py::arg("keep"))
      .def(
          "reordering",
          [](const BinaryTable& t, SourceFilter* filter, const py::object& keep) {
            const KeepSource k = optional_function<KeepSource>(keep);
            py::gil_scoped_release unlocked;
            return std::make_shared<ReorderingStore>(t.reordering(filter, k));
          },
          py::arg("filter"), py::arg("keep"))
      .def(py::pickle([](const BinaryTable& t) { return py::make_tuple(t.path()); },
                      [](const py::tuple& state) { return open_table(state[0].cast<std::string>()); }));

  m.def(
      "write_binary_table",
      [](const PhraseStore& store, const std::string& source, std::int64_t size, std::int64_t mtime_ns,
         const std::string& path) {
        py::gil_scoped_release unlocked;
        write_binary_table(store, BINARY_PHRASES, SourceStamp{source, size, mtime_ns}, path);
      },
      "Writes a phrase table's store (every pair) as a binarized table.", py::arg("store"), py::arg("source"),
      py::arg("size"), py::arg("mtime_ns"), py::arg("path"));
  m.def(
      "write_binary_table",
      [](const ReorderingStore& store, const std::string& source, std::int64_t size, std::int64_t mtime_ns,
         const std::string& path) {
        py::gil_scoped_release unlocked;
        write_binary_table(grouped(store), store.conditioned_on_target() ? BINARY_REORDERING_FE : BINARY_REORDERING_F,
                           SourceStamp{source, size, mtime_ns}, path);
      },
      "Writes a reordering table's store (every row) as a binarized table.", py::arg("store"), py::arg("source"),
      py::arg("size"), py::arg("mtime_ns"), py::arg("path"));
}

}  // namespace fstdecode
