// The Python face of decimal_code.h, for its tests: `_core.decimal_encode(values, exponent,
// negative=False)`, the codes of doubles (the identity transform) in a column of that exponent
// and sign, as bytes, and `_core.decimal_decode(data, exponent, negative=False)`, every code of
// `data` back (ValueError, one line, on a truncated or invalid code).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.h"
#include "decimal_code.h"

namespace py = pybind11;

namespace fstdecode {

namespace {

unsigned checked_exponent(int exponent) {
  if (exponent < 0 || exponent > static_cast<int>(kMaxDecimalExponent))
    throw py::value_error("exponent must be in 0.." + std::to_string(kMaxDecimalExponent));
  return static_cast<unsigned>(exponent);
}

}  // namespace

void bind_decimal_code(py::module_& m) {
  m.def(
      "decimal_encode",
      [](const std::vector<double>& values, int exponent, bool negative) {
        const unsigned e = checked_exponent(exponent);
        std::string out;
        for (const double v : values) put_decimal(out, v, e, negative, v, Identity());
        return py::bytes(out);
      },
      "The decimal codes of `values` (decimal_code.h), one after another.", py::arg("values"), py::arg("exponent"),
      py::arg("negative") = false);
  m.def(
      "decimal_decode",
      [](const py::bytes& data, int exponent, bool negative) {
        const unsigned e = checked_exponent(exponent);
        const std::string bytes(data);
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
        const auto* end = p + bytes.size();
        std::vector<double> out;
        while (p != end) {
          const auto* at = p;
          double y;
          if (!get_decimal(p, end, e, negative, Identity(), y))
            throw py::value_error("a decimal code is cut short or invalid at byte " +
                                  std::to_string(at - reinterpret_cast<const unsigned char*>(bytes.data())));
          out.push_back(y);
        }
        return out;
      },
      "Every decimal code of `data`, decoded.", py::arg("data"), py::arg("exponent"), py::arg("negative") = false);
}

}  // namespace fstdecode
