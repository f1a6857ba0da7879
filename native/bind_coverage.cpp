// The Python face of the coverage DP (coverage.h): `_core.CoverageOptions` and
// `_core.coverage_search`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "coverage.h"

namespace py = pybind11;

namespace fstdecode {

void bind_coverage(py::module_& m) {
  py::class_<CoverageOptions>(m, "CoverageOptions",
                              "fstdecode.search.coverage_dp.CoverageOptions; max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, bool minimize) {
             CoverageOptions o{};
             o.nbest = nbest;
             o.max_states = max_states;
             o.minimize = minimize;
             return o;
           }),
           py::kw_only(), py::arg("nbest"), py::arg("max_states"), py::arg("minimize"))
      .def_readonly("nbest", &CoverageOptions::nbest)
      .def_readonly("max_states", &CoverageOptions::max_states)
      .def_readonly("minimize", &CoverageOptions::minimize);
  m.def("coverage_search", &coverage_search,
        "the exact coverage-vector DP (fstdecode.search.coverage_dp.search)", py::arg("problem"),
        py::arg("options"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace fstdecode
