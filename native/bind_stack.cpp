// The Python face of the stack decoder (stack.h): `_core.StackOptions` and `_core.stack_search`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "stack.h"

namespace py = pybind11;

namespace fstdecode {

void bind_stack(py::module_& m) {
  py::class_<StackOptions>(m, "StackOptions", "fstdecode.search.stack.StackOptions; thresholds < 0 are off")
      .def(py::init([](int nbest, long max_states, int beam_size, double beam_threshold,
                       bool distortion_estimate, bool early_pruning, double early_threshold, int distinct,
                       bool moses_nbest, int cube_pop_limit) {
             StackOptions o{};
             o.nbest = nbest;
             o.max_states = max_states;
             o.beam_size = beam_size;
             o.beam_threshold = beam_threshold;
             o.distortion_estimate = distortion_estimate;
             o.early_pruning = early_pruning;
             o.early_threshold = early_threshold;
             o.distinct = distinct;
             o.moses_nbest = moses_nbest;
             o.cube_pop_limit = cube_pop_limit;
             return o;
           }),
           py::kw_only(), py::arg("nbest"), py::arg("max_states"), py::arg("beam_size"),
           py::arg("beam_threshold"), py::arg("distortion_estimate"), py::arg("early_pruning"),
           py::arg("early_threshold"), py::arg("distinct"), py::arg("moses_nbest"), py::arg("cube_pop_limit"))
      .def_readwrite("nbest", &StackOptions::nbest)
      .def_readwrite("max_states", &StackOptions::max_states)
      .def_readwrite("beam_size", &StackOptions::beam_size)
      .def_readwrite("beam_threshold", &StackOptions::beam_threshold)
      .def_readwrite("distortion_estimate", &StackOptions::distortion_estimate)
      .def_readwrite("early_pruning", &StackOptions::early_pruning)
      .def_readwrite("early_threshold", &StackOptions::early_threshold)
      .def_readwrite("distinct", &StackOptions::distinct)
      .def_readwrite("moses_nbest", &StackOptions::moses_nbest)
      .def_readwrite("cube_pop_limit", &StackOptions::cube_pop_limit);
  m.def("stack_search", &stack_search, "the stack decoder (fstdecode.search.stack.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace fstdecode
