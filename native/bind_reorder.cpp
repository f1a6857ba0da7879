// The Python face of build_reordering (reorder.h): `_core.build_reordering`, the FST method's
// R and L.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <string>
#include <vector>

#include "bindings.h"
#include "problem.h"
#include "reorder.h"

namespace py = pybind11;

namespace fstdecode {

void bind_reorder(py::module_& m) {
  m.def(
      "build_reordering",
      [](const Problem& problem, const std::vector<std::string>& vocab, const std::vector<int>& input_labels,
         long max_states, bool minimize, double threshold) {
        Reordering r;
        {
          py::gil_scoped_release release;
          r = build_reordering(problem, vocab, input_labels, ReorderOptions{max_states, minimize, threshold});
        }
        py::dict out;
        out["status"] = r.status;
        out["message"] = r.message;
        out["fst"] = py::bytes(r.fst);
        out["lm_fst"] = py::bytes(r.lm_fst);
        out["symbols"] = py::str(r.symbols);
        out["states"] = r.states;
        out["transitions"] = r.transitions;
        out["option"] = r.option;
        out["s1"] = r.s1;
        out["s2"] = r.s2;
        out["jumps"] = r.jumps;
        out["lm_cost"] = r.lm_cost;
        out["lr"] = r.lr;
        out["best"] = r.best;
        return out;
      },
      "R and L of the WFST cascade (fstdecode.fst.reorder.build_reordering): the FSTs as OpenFst "
      "binary ConstFsts, R's output symbols (one a line), and per output label its option index, "
      "s1, s2, jumps and LM cost (and reordering score, lr: empty without a reordering model)",
      py::arg("problem"), py::arg("vocab"), py::arg("input_labels"), py::arg("max_states"),
      py::arg("minimize"), py::arg("threshold"));
}

}  // namespace fstdecode
