// The Python face of PhraseIndex (table.h): `_core.PhraseIndex`, whose sentence() gives a
// `_core.Problem` (bind_problem.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "language_model.h"
#include "problem.h"
#include "table.h"

namespace py = pybind11;

namespace fstdecode {

void bind_table(py::module_& m) {
  py::class_<PhraseIndex>(m, "PhraseIndex",
                          "The model's phrase table with each pair's ŵ(p), registered per source "
                          "phrase; builds a sentence's Problem natively (table.h).")
      .def(py::init([](const LanguageModel& lm, std::vector<double> tm, double word, double phrase, double unknown,
                       double lm_weight, double unknown_value, bool moses_values) {
             return std::make_unique<PhraseIndex>(
                 lm, PairWeights{std::move(tm), word, phrase, unknown, lm_weight}, unknown_value, moses_values);
           }),
           py::arg("lm"), py::arg("tm"), py::arg("word"), py::arg("phrase"), py::arg("unknown"),
           py::arg("lm_weight"), py::arg("unknown_value"), py::arg("moses_values") = false,
           py::keep_alive<1, 2>())  // the index keeps its LM alive
      .def("add_source", &PhraseIndex::add_source, py::arg("source"), py::arg("targets"), py::arg("scores"))
      .def("__len__", &PhraseIndex::size, "The number of source phrases registered.")
      .def(
          "add_store",
          [](PhraseIndex& index, const PhraseStore& store) {
            py::gil_scoped_release unlocked;
            index.add_store(store);
          },
          "Registers every source of a PhraseStore; handle h is the store's source h.", py::arg("store"))
      .def(
          "set_reordering",
          [](PhraseIndex& index, const ReorderingStore& store, int kind, int orientations, int back_column,
             int next_column, std::vector<double> back_weights, std::vector<double> next_weights,
             std::optional<std::vector<double>> defaults, int moses_width) {
            ReorderingSpec spec;
            spec.kind = kind;
            spec.orientations = orientations;
            spec.back_column = back_column;
            spec.next_column = next_column;
            spec.back_weights = std::move(back_weights);
            spec.next_weights = std::move(next_weights);
            spec.has_defaults = defaults.has_value();
            if (defaults) spec.defaults = std::move(*defaults);
            spec.moses_width = moses_width;
            index.set_reordering(store, std::move(spec));
          },
          "From now on sentence() sets its problem's reordering rows from the store (table.h "
          "ReorderingSpec): a direction's column -1 when the model has none; defaults None: none.",
          py::arg("store"), py::arg("kind"), py::arg("orientations"), py::arg("back_column"), py::arg("next_column"),
          py::arg("back_weights"), py::arg("next_weights"), py::arg("defaults"), py::arg("moses_width"),
          py::keep_alive<1, 2>())  // the index keeps the store alive
      .def(
          "sentence",
          [](const py::object& self, const std::vector<std::string>& words, int d, double eta) {
            std::vector<int> s, t, handle;
            std::unique_ptr<Problem> problem = self.cast<PhraseIndex&>().sentence(words, d, eta, s, t, handle);
            py::object core = py::cast(std::move(problem));
            py::detail::keep_alive_impl(core, self);  // a problem keeps the index (and its LM) alive
            return py::make_tuple(core, s, t, handle);
          },
          "(Problem, s, t, handle): the problem of the tokens and its hits (0-based spans; "
          "handle -1: an unknown word's copy)",
          py::arg("words"), py::arg("d"), py::arg("eta"));
}

}  // namespace fstdecode
