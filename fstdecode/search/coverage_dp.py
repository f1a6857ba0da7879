"""The exact coverage-vector DP: target left to right, bit-vector states.

This is the search space of Koehn et al. (2003) and Moses without any
pruning: a state is ``(coverage, last source position, last target word)``
and a transition appends one phrase to the target string. It is exact and
takes time exponential in n (Chang & Collins, Section 5.2). This Python DP is a reference
oracle (an independent cross-check of the signature DP and of every native search, and state
counts); ``--method coverage`` is the native core's (:mod:`fstdecode.search.native_coverage`),
which reads :class:`CoverageOptions` from here.
Positions and scores follow :mod:`fstdecode.problem.problem`.

**Moses' models.** With a lexicalized reordering model the state also holds what the next
phrase's orientation and reordering score read of the last phrase
(:meth:`~fstdecode.problem.problem.SearchProblem.reordering_state`: its start, for ``msd`` and
``mslr``, and its weighted forward row, with a forward direction); without one the states are
the plain ones. Under ``moses`` distortion semantics (:mod:`fstdecode.model.distortion`) a
phrase that does not start at the first gap g must end within ``t + 1 − g ≤ d``, nothing is
checked at ``</s>``, and the jump into ``</s>`` is charged only with ``[early-distortion-cost]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fstdecode.problem.problem import SearchError, SearchLimitError, SearchProblem, SearchResult, no_derivation_message
from fstdecode.search.base import SearchOptions
from fstdecode.search.kbest import first, insert_best
from fstdecode.search.signature_dp import minimize_field
from fstdecode.statespace.ngram import joined

# key: (coverage bits over tokens 1..n (bit p-1 for position p), last end position,
#       LM context: the last order-1 target words, minimised as in fstdecode.statespace.ngram,
#       the last phrase's reordering state: SearchProblem.reordering_state, () without a model)
Key = tuple[int, int, tuple[int, ...], tuple]


@dataclass(frozen=True)
class CoverageOptions(SearchOptions):
    """``--method coverage``: the n-best size, the state budget and state minimisation."""

    minimize: bool = minimize_field()


def search(problem: SearchProblem, options: CoverageOptions = CoverageOptions()) -> SearchResult:
    """The k best derivations, by exhaustive DP over coverage vectors (any LM order).

    The target string is one tape that starts with ``<s>``; each step appends
    a phrase to it with :func:`fstdecode.statespace.ngram.join`, which scores the
    phrase's first words in the tape's context.
    """
    n, d, end, eta = problem.n, problem.d, problem.end, problem.eta
    nbest, max_states, minimize = options.nbest, options.max_states, options.minimize
    full = (1 << n) - 1
    # layers[c]: states covering c tokens; a hypothesis is (score, (prev key, rank, option)).
    layers: list[dict[Key, list]] = [{} for _ in range(n + 1)]
    layers[0][(0, 0, (problem.bos,), ())] = [(0.0, None)]
    moses = problem.semantics == "moses"
    lr = problem.reordering is not None
    states, transitions = 1, 0
    for c in range(n + 1):
        for key, hyps in layers[c].items():
            cov, last_t, context, rstate = key
            if cov == full:
                continue
            tape = (0, (), last_t, context)
            g = ((cov + 1) & ~cov).bit_length()  # the first uncovered position
            for s in range(1, n + 1):
                jump = abs(last_t + 1 - s)
                if jump > d or cov >> (s - 1) & 1:
                    continue
                for opt in problem.by_start[s]:
                    span = ((1 << (opt.t - opt.s + 1)) - 1) << (s - 1)
                    if cov & span:
                        continue
                    if moses and s != g and opt.t + 1 - g > d:
                        continue  # Moses' gap rule (fstdecode.model.distortion)
                    new_cov = cov | span
                    # The final jump into </s> must be possible from a full coverage.
                    if new_cov == full and not moses and end - opt.t - 1 > d:
                        continue
                    transitions += 1
                    new, lm = joined(problem, tape, opt, None, minimize)
                    delta = opt.score + lm - eta * jump
                    if lr:
                        delta += problem.reordering_after(last_t, rstate, opt)
                    new_key = (new_cov, opt.t, new[3], problem.reordering_state(opt))
                    layer = layers[c + opt.t - opt.s + 1]
                    entry = layer.get(new_key)
                    if entry is None:
                        states += 1
                        if max_states is not None and states > max_states:
                            raise SearchLimitError(f"more than {max_states} states (--max-states)")
                        entry = layer[new_key] = []
                    for rank, hyp in enumerate(hyps):
                        insert_best(entry, (hyp[0] + delta, (key, rank, opt)), nbest, first)
    finals: list = []
    for key, hyps in layers[n].items():
        _, last_t, context, _ = key
        if not moses and end - last_t - 1 > d:
            continue
        _, lm = joined(problem, (0, (), last_t, context), problem.eos_option, None, minimize)
        close = lm - eta * (end - last_t - 1) if problem.charge_final else lm
        for rank, hyp in enumerate(hyps):
            insert_best(finals, (hyp[0] + close, (key, rank)), nbest, first)
    if not finals:
        raise SearchError(no_derivation_message(d))
    out = []
    for score, (key, rank) in finals:
        phrases = []
        while True:
            _, bp = layers[bin(key[0]).count("1")][key][rank]
            if bp is None:
                break
            key, rank, opt = bp
            phrases.append(opt.phrase)
        out.append((score, tuple(reversed(phrases))))
    return SearchResult(tuple(out), optimal=True, states=states, transitions=transitions)

