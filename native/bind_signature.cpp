// The Python face of the signature searches (signature.h): `_core.SignatureDpOptions`,
// `_core.SignatureBeamOptions`, `_core.signature_dp`, `_core.signature_beam` and
// `_core.signature_bounded`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.h"
#include "signature.h"

namespace py = pybind11;

namespace fstdecode {

void bind_signature(py::module_& m) {
  py::class_<SignatureDpOptions>(m, "SignatureDpOptions",
                                 "fstdecode.search.signature_dp.DpOptions (and BoundedOptions); "
                                 "max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, bool minimize) {
             SignatureDpOptions o{};
             o.nbest = nbest;
             o.max_states = max_states;
             o.minimize = minimize;
             return o;
           }),
           py::kw_only(), py::arg("nbest"), py::arg("max_states"), py::arg("minimize"))
      .def_readonly("nbest", &SignatureDpOptions::nbest)
      .def_readonly("max_states", &SignatureDpOptions::max_states)
      .def_readonly("minimize", &SignatureDpOptions::minimize);
  py::class_<SignatureBeamOptions>(m, "SignatureBeamOptions",
                                   "fstdecode.search.signature_beam.BeamOptions; beam_threshold < 0: "
                                   "off; max_states < 0: no budget")
      .def(py::init([](int nbest, long max_states, long long beam_size, double beam_threshold,
                       const std::string& heuristic, bool minimize) {
             SignatureBeamOptions o;
             o.nbest = nbest;
             o.max_states = max_states;
             o.beam_size = beam_size;
             o.beam_threshold = beam_threshold;
             o.heuristic = heuristic_of(heuristic);
             o.minimize = minimize;
             return o;
           }),
           py::kw_only(), py::arg("nbest"), py::arg("max_states"), py::arg("beam_size"),
           py::arg("beam_threshold"), py::arg("heuristic"), py::arg("minimize"))
      .def_readonly("nbest", &SignatureBeamOptions::nbest)
      .def_readonly("max_states", &SignatureBeamOptions::max_states)
      .def_readonly("beam_size", &SignatureBeamOptions::beam_size)
      .def_readonly("beam_threshold", &SignatureBeamOptions::beam_threshold)
      .def_property_readonly("heuristic", [](const SignatureBeamOptions& o) { return heuristic_name(o.heuristic); })
      .def_readonly("minimize", &SignatureBeamOptions::minimize);
  m.def("signature_dp", &signature_dp, "the signature-state DP (fstdecode.search.signature_dp.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  m.def("signature_beam", &signature_beam, "the signature beam (fstdecode.search.signature_beam.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
  m.def("signature_bounded", &signature_bounded, "the bounded exact search (fstdecode.search.bounded.search)",
        py::arg("problem"), py::arg("options"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace fstdecode
