// The Python face of CombinedLM (combined_lm.h): `_core.CombinedLM(parts, weights, words)`, a
// `_core.LanguageModel` (its queries are the base class's), registered after the types it
// combines. It holds its parts alive (shared_ptr), as a Problem's Python object holds its LM.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "combined_lm.h"

namespace py = pybind11;

namespace fstdecode {

void bind_combined_lm(py::module_& m) {
  py::class_<CombinedLM, LanguageModel, std::shared_ptr<CombinedLM>>(
      m, "CombinedLM",
      "Several LMs as one: ln p is the weighted sum of the parts' (weights >= 0); word ids are its "
      "own, over the given words (the parts' vocabularies) and <unk>.")
      .def(py::init([](std::vector<std::shared_ptr<LanguageModel>> parts, std::vector<double> weights,
                       const std::vector<std::string>& words) {
             std::vector<std::shared_ptr<const LanguageModel>> held(parts.begin(), parts.end());
             py::gil_scoped_release unlocked;
             return std::make_shared<CombinedLM>(std::move(held), std::move(weights), words);
           }),
           py::arg("parts"), py::arg("weights"), py::arg("words"))
      .def_property_readonly("size", &CombinedLM::size)
      .def("weight", &CombinedLM::weight, py::arg("k"));
}

}  // namespace fstdecode
