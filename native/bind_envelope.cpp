// The Python face of envelope.h: `_core.upper_envelopes(a, b, offsets) -> (first, x, from, to)`
// over numpy arrays (float64, float64, int64), for fstdecode/tune/mert.py's line search.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "bindings.h"
#include "envelope.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

template <typename T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

}  // namespace

void bind_envelope(py::module_& m) {
  m.def(
      "upper_envelopes",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> a,
         py::array_t<double, py::array::c_style | py::array::forcecast> b,
         py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> offsets) {
        if (a.ndim() != 1 || b.ndim() != 1 || offsets.ndim() != 1 || a.size() != b.size() || offsets.size() < 1)
          throw std::invalid_argument("upper_envelopes: a and b of one length, offsets of sentences + 1");
        const std::int64_t* off = offsets.data();
        const auto sentences = static_cast<std::size_t>(offsets.size() - 1);
        if (off[0] != 0 || off[sentences] != a.size())
          throw std::invalid_argument("upper_envelopes: offsets must run from 0 to the number of entries");
        Envelopes e;
        {
          py::gil_scoped_release unlocked;
          e = upper_envelopes(a.data(), b.data(), off, sentences);
        }
        return py::make_tuple(to_array(e.first), to_array(e.x), to_array(e.from), to_array(e.to));
      },
      "(first, x, from, to): each non-empty sentence's top entry at -inf, and every breakpoint of "
      "the upper envelopes of the lines a + γb (envelope.h)",
      py::arg("a"), py::arg("b"), py::arg("offsets"));
}

}  // namespace fstdecode
