// The module definition where Python and the native core meet (as kenlm.pyx is for KenLM); each
// bound type is in its own bind_*.cpp (bindings.h). Every search releases the GIL, so threads can
// decode sentences side by side.
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace py = pybind11;
using namespace fstdecode;

PYBIND11_MODULE(_core, m) {
  m.doc() = "fstdecode's native search core";
  bind_language_model(m);  // first: the base class of NgramLM and KenLMBinary
  bind_kenlm(m);
  bind_lm(m);
  bind_combined_lm(m);  // combines any of the above
  bind_problem(m);  // takes a LanguageModel; Hypothesis and Result, which the searches return
  bind_moses_float(m);
  bind_reorder(m);
  bind_phrase_table(m);
  bind_binary_table(m);  // takes and gives PhraseStores
  bind_probing_table(m);  // likewise; raises BinaryFormatError
  bind_compact_table(m);  // takes and gives PhraseStores (Moses' .minphr, .minlexr)
  bind_moses_binary_table(m);  // gives PhraseStores and ReorderingStores
  bind_checksum(m);
  bind_decimal_code(m);
  bind_table(m);  // gives Problems; takes a PhraseStore
  bind_stack(m);
  bind_signature(m);
  bind_coverage(m);
  bind_exact(m);
  bind_envelope(m);
}
