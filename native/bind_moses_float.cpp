// The Python face of Moses' n-best arithmetic (moses_float.h): `_core.MosesScoring`,
// `_core.NbestFormat`, `_core.moses_nbest` and `_core.moses_entries`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "moses_float.h"

namespace py = pybind11;

namespace fstdecode {

void bind_moses_float(py::module_& m) {
  py::class_<MosesScoring>(m, "MosesScoring",
                           "a model's dense features as Moses registers and prints them "
                           "(fstdecode.search.moses_nbest.moses_scoring builds it)")
      .def(py::init([](std::vector<int> kind, std::vector<int> component, std::vector<float> weight,
                       bool early_distortion, double unknown_value, std::vector<int> lr_back_component,
                       std::vector<int> lr_back_column, std::vector<int> lr_forward_component,
                       std::vector<int> lr_forward_column, int lr_components, std::vector<std::string> names,
                       std::vector<std::vector<int>> printed) {
             MosesScoring s;
             s.kind = std::move(kind);
             s.component = std::move(component);
             s.weight = std::move(weight);
             s.early_distortion = early_distortion;
             s.unknown_value = unknown_value;
             s.lr_back_component = std::move(lr_back_component);
             s.lr_back_column = std::move(lr_back_column);
             s.lr_forward_component = std::move(lr_forward_component);
             s.lr_forward_column = std::move(lr_forward_column);
             s.lr_components = lr_components;
             s.names = std::move(names);
             s.printed = std::move(printed);
             s.check();
             return s;
           }),
           py::kw_only(), py::arg("kind"), py::arg("component"), py::arg("weight"), py::arg("early_distortion"),
           py::arg("unknown_value"), py::arg("lr_back_component"), py::arg("lr_back_column"),
           py::arg("lr_forward_component"), py::arg("lr_forward_column"), py::arg("lr_components"),
           py::arg("names"), py::arg("printed"));

  py::class_<NbestFormat>(m, "NbestFormat", "fstdecode.search.moses_nbest.NbestFormat, field for field")
      .def(py::init([](bool labeled, bool segmentation, bool alignment, bool mark_unknown) {
             return NbestFormat{labeled, segmentation, alignment, mark_unknown};
           }),
           py::kw_only(), py::arg("labeled"), py::arg("segmentation"), py::arg("alignment"), py::arg("mark_unknown"));

  m.def("moses_table_value", &moses_table_value,
        "a table's probability as Moses holds it, from its natural log (TransformScore, FloorScore)",
        py::arg("ln_score"));
  m.def(
      "moses_float_add", [](float a, float b) { return a + b; }, "a + b in C float (Moses' sums)", py::arg("a"),
      py::arg("b"));
  m.def(
      "moses_nbest",
      [](const Problem& problem, const Result& result, const MosesScoring& scoring, long id, const NbestFormat& format,
         bool with_fields) {
        std::vector<MosesFields> fields;
        std::string text;
        {
          py::gil_scoped_release unlocked;
          text = moses_nbest(problem, result, scoring, id, format, with_fields ? &fields : nullptr);
        }
        return py::make_tuple(text, with_fields ? py::cast(fields) : py::none());
      },
      "(the n-best lines of a stack search's result, in Moses' float arithmetic and order; with fields, each "
      "hypothesis' (feature field, total) in the result's order, else None)",
      py::arg("problem"), py::arg("result"), py::arg("scoring"), py::arg("id"), py::arg("format"),
      py::arg("fields") = false);
  m.def(
      "moses_entries",
      [](const Problem& problem, const Result& result, const MosesScoring& scoring) {
        std::vector<std::pair<std::vector<float>, float>> out;
        for (auto& e : moses_entries(problem, result, scoring)) out.emplace_back(std::move(e.values), e.total);
        return out;
      },
      "(values, total) of each hypothesis of result, in its order (the dense components of scoring)",
      py::arg("problem"), py::arg("result"), py::arg("scoring"));
}

}  // namespace fstdecode
