// The Python face of checksum.h: `_core.crc32c(data, crc=0)` over bytes, and
// `_core.file_crc32c(path) -> (crc, size)` over a file (the GIL released; ChecksumError, an
// OSError, names the file).
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "checksum.h"

namespace py = pybind11;

namespace fstdecode {

void bind_checksum(py::module_& m) {
  py::register_exception<ChecksumError>(m, "ChecksumError", PyExc_OSError);
  m.def(
      "crc32c",
      [](py::bytes data, std::uint32_t crc) {
        char* p = nullptr;
        Py_ssize_t n = 0;
        PyBytes_AsStringAndSize(data.ptr(), &p, &n);
        return crc32c(p, static_cast<std::size_t>(n), crc);
      },
      "The CRC-32C of `data`, continuing from `crc`.", py::arg("data"), py::arg("crc") = 0);
  m.def(
      "file_crc32c",
      [](const std::string& path) {
        FileChecksum c;
        {
          py::gil_scoped_release release;
          c = file_crc32c(path);
        }
        return py::make_tuple(c.crc, c.size);
      },
      "(CRC-32C, size in bytes) of the regular file `path`, read once from start to end.", py::arg("path"));
}

}  // namespace fstdecode
