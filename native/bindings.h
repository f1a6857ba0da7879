// The pieces of the `_core` module, one per bound type (or family of types), each in its own
// bind_*.cpp; bindings.cpp's PYBIND11_MODULE calls them in the order listed here, a type's
// bases and argument types before it.
#pragma once

#include <pybind11/pybind11.h>

namespace fstdecode {

void bind_language_model(pybind11::module_& m);  // bind_language_model.cpp: LanguageModel, RestrictedLM
void bind_kenlm(pybind11::module_& m);           // bind_kenlm.cpp: KenLMBinary
void bind_lm(pybind11::module_& m);              // bind_lm.cpp: NgramLM, ArpaFormatError
void bind_combined_lm(pybind11::module_& m);     // bind_combined_lm.cpp: CombinedLM
void bind_problem(pybind11::module_& m);         // bind_problem.cpp: Problem, Hypothesis, Result
void bind_moses_float(pybind11::module_& m);     // bind_moses_float.cpp: MosesScoring, NbestFormat, moses_nbest
void bind_reorder(pybind11::module_& m);         // bind_reorder.cpp: build_reordering
void bind_phrase_table(pybind11::module_& m);    // bind_phrase_table.cpp: PhraseStore, ReorderingStore, SourceFilter, read_*
void bind_binary_table(pybind11::module_& m);   // bind_binary_table.cpp: BinaryTable, write_binary_table
void bind_probing_table(pybind11::module_& m);  // bind_probing_table.cpp: ProbingTable (Moses' ProbingPT)
void bind_compact_table(pybind11::module_& m);  // bind_compact_table.cpp: CompactPhraseTable, CompactReorderingTable
void bind_moses_binary_table(pybind11::module_& m);  // bind_moses_binary_table.cpp: MosesPhraseTable, MosesReorderingTable
void bind_checksum(pybind11::module_& m);       // bind_checksum.cpp: crc32c, file_crc32c, ChecksumError
void bind_decimal_code(pybind11::module_& m);   // bind_decimal_code.cpp: decimal_encode, decimal_decode (tests)
void bind_table(pybind11::module_& m);           // bind_table.cpp: PhraseIndex
void bind_stack(pybind11::module_& m);           // bind_stack.cpp: StackOptions, stack_search
void bind_signature(pybind11::module_& m);       // bind_signature.cpp: Signature*Options, signature_*
void bind_coverage(pybind11::module_& m);        // bind_coverage.cpp: CoverageOptions, coverage_search
void bind_exact(pybind11::module_& m);           // bind_exact.cpp: ExactOptions, ExactBounds, ExactSupport, exact_*
void bind_envelope(pybind11::module_& m);        // bind_envelope.cpp: upper_envelopes (MERT's line search)

}  // namespace fstdecode
