// The Python face of the exact A* (exact.h): `_core.ExactOptions`, `_core.ExactBounds`,
// `_core.ExactSupport`, `_core.exact_bounds`, `_core.exact_search`, `_core.exact_support` and
// `_core.exact_decode` (the whole of --method exact, one call a sentence).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "bindings.h"
#include "exact.h"
#include "stack.h"

namespace py = pybind11;

namespace fstdecode {

void bind_exact(py::module_& m) {
  py::class_<ExactOptions>(m, "ExactOptions",
                           "fstdecode.search.exact.ExactOptions; max_states < 0: no budget; time_limit <= 0: none; bounds_work < 0: the rule of max_states")
      .def(py::init([](int nbest, long max_states, double time_limit, double lower_bound, long bounds_work) {
             ExactOptions o{};
             o.nbest = nbest;
             o.max_states = max_states;
             o.time_limit = time_limit;
             o.lower_bound = lower_bound;
             o.bounds_work = bounds_work;
             return o;
           }),
           py::kw_only(), py::arg("nbest"), py::arg("max_states"), py::arg("time_limit"),
           py::arg("lower_bound"), py::arg("bounds_work"))
      .def_readonly("nbest", &ExactOptions::nbest)
      .def_readonly("max_states", &ExactOptions::max_states)
      .def_readonly("time_limit", &ExactOptions::time_limit)
      .def_readonly("lower_bound", &ExactOptions::lower_bound)
      .def_readonly("bounds_work", &ExactOptions::bounds_work);
  py::class_<ExactBounds>(m, "ExactBounds", "the pieces of the exact search's heuristic (tests)")
      .def_readonly("beta", &ExactBounds::beta, "by option id (add_option order)")
      .def_readonly("eos", &ExactBounds::eos)
      .def_readonly("work", &ExactBounds::work, "the units of work the tables took (exact.cpp, Work)")
      .def_readonly("cover", &ExactBounds::cover, "cover[a][b], 1 <= a <= b <= n")
      .def_readonly("before", &ExactBounds::before, "with tapes: the contexts (words) before each start")
      .def_readonly("lifts", &ExactBounds::lifts, "with tapes: each context's charge")
      .def_readonly("eos_lifted", &ExactBounds::eos_lifted)
      .def_readonly("suffix", &ExactBounds::suffix);
  m.def("exact_bounds", &exact_bounds, "the heuristic's pieces of a problem (with tapes: the tape bounds' too)",
        py::arg("problem"), py::arg("tapes") = false, py::call_guard<py::gil_scoped_release>());
  m.def("exact_search", &exact_search, "A* over coverage states (fstdecode.search.exact.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  m.def("exact_decode", &exact_decode,
        "--method exact for one sentence: the stack decoder's lower bound (under `stack`), the A* (under "
        "`options`, lower_bound -inf) and the answer (fstdecode.search.native_exact.exact_search)",
        py::arg("problem"), py::arg("options"), py::arg("stack"), py::call_guard<py::gil_scoped_release>());
  py::class_<BoundCheck>(m, "BoundCheck", "exact_bound_check's findings (tests)")
      .def_readonly("worst", &BoundCheck::worst, "largest best completion minus the state's bound (<= 0)")
      .def_readonly("looser", &BoundCheck::looser, "largest bound minus open_bound (<= 0)")
      .def_readonly("states", &BoundCheck::states)
      .def_readonly("best", &BoundCheck::best)
      .def_readonly("windows", &BoundCheck::windows);
  m.def("exact_bound_check", &exact_bound_check,
        "every reachable state's exhaustive best completion against the A*'s heuristic (tests)", py::arg("problem"),
        py::call_guard<py::gil_scoped_release>());
  py::class_<ExactSupport>(m, "ExactSupport", "exact_support's result and option indices")
      .def_readonly("result", &ExactSupport::result)
      .def_readonly("options", &ExactSupport::options, "Option::index of each kept option, ascending");
  m.def("exact_support", &exact_support,
        "the options of every derivation scoring at least options.lower_bound (fstdecode.search.exact.support)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace fstdecode
