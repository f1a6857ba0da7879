// The only file where Python and the native core meet (as kenlm.pyx is for KenLM). Every search
// releases the GIL, so threads can decode sentences side by side.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "lm.h"
#include "problem.h"
#include "signature.h"
#include "stack.h"

namespace py = pybind11;
using namespace fstdecode;

PYBIND11_MODULE(_core, m) {
  m.doc() = "fstdecode's native search core";
  py::register_exception<ArpaFormatError>(m, "ArpaFormatError", PyExc_ValueError);

  // ---- LM -------------------------------------------------------------------------------
  // (section: lm)

  // ---- Problem and results --------------------------------------------------------------
  // (section: problem)

  // ---- Searches -------------------------------------------------------------------------
  // (section: searches)
}
