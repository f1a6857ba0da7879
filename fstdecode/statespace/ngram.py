"""Signature states for LMs of any order N (Chang & Collins, Section 4.1: "the
generalization ... to higher-order n-gram language models is straightforward").

With K = N − 1, a signature is ``(s, F, t, L)``:

* ``F``: the first words of the tape whose LM scores still lack their left
  context — the first ``min(len, K)`` words — because the tape may later be
  prepended to another one. The ``<s>`` tape has nothing before it, so its
  ``F`` is ``()``. A tape with ``len(F) < K`` is *short*: ``F`` is all of it.
* ``L``: the last words, the context of whatever follows the tape: the last
  ``min(len, K)`` words, shortened KenLM-style (right-state minimisation)
  once the tape's context is complete (it is long, or holds ``<s>``): while
  ``L`` is not the prefix of any longer n-gram of the model, every next word
  backs off through it, so its backoff weight is charged at once and its
  first word dropped. Equivalent states then merge.

:func:`join` computes the tape made by ψ1 p ψ2 and the LM events it
settles: each deferred word whose context becomes complete, each word of p
before its N-th (the later ones are in ŵ(p)), and the backoffs charged by
minimisation. For N = 2 this is Figure 4 exactly; the tests hold
:func:`expand_ngram` to the bigram :func:`fstdecode.statespace.signature.expand`.
"""

from __future__ import annotations

from typing import Iterator

from fstdecode.problem.problem import Option, SearchProblem
from fstdecode.statespace import gaprule, reordering, signature
from fstdecode.statespace.signature import PHI, role_choices

NSig = tuple[int, tuple[int, ...], int, tuple[int, ...]]
NSigs = tuple[NSig, ...]
#: An LM event: ``(context, word)`` is ln p(word | context); ``(context, None)`` a backoff charge.
Event = tuple[tuple[int, ...], int | None]


def start_state(problem: SearchProblem) -> NSigs:
    return ((0, (), 0, (problem.bos,)),)


def goal_state(problem: SearchProblem) -> NSigs:
    """One tape from <s> to </s>; nothing follows </s>, so ``L`` is just it."""
    return ((0, (), problem.end, (problem.eos,)),)


def minimise(problem: SearchProblem, context: tuple[int, ...]) -> tuple[tuple[int, ...], list[Event]]:
    """KenLM's right-state minimisation: the shortest equivalent context and the backoffs it charges."""
    events: list[Event] = []
    while context and not problem.extends(context):
        events.append((context, None))
        context = context[1:]
    return context, events


def join(problem: SearchProblem, a: NSig | None, opt: Option, c: NSig | None, minimize: bool = True) -> tuple[NSig, tuple[Event, ...]]:
    """The tape ψ1 · p · ψ2 (``a``/``c`` None for φ) and the LM events it settles.

    Jumps are not included (the caller knows its positions).
    """
    k = problem.order - 1
    e = opt.words
    if opt.s == problem.end:  # </s> closes the <s> tape: score it, nothing follows.
        return (a[0], (), problem.end, (problem.eos,)), ((a[3][-k:], problem.eos),)
    bos_tape = a is not None and a[0] == 0
    seq = list(a[3]) if a else []
    # Index in the new tape of p's first word; K stands for "K or more".
    index = 0 if a is None else (k if bos_tape or len(a[1]) >= k else len(a[1]))
    tail = e + (c[1] if c else ())
    events: list[Event] = []
    for i, w in enumerate(tail):
        in_phrase_scored = i < len(e) and i >= k  # in ŵ(p): its context lies inside p
        if not in_phrase_scored and (bos_tape or index + i >= k):
            events.append((tuple(seq[-k:]), w))
        seq.append(w)
    first = () if bos_tape else ((a[1] if a else ()) + e + (c[1] if c else ()))[:k]
    long_c = c is not None and len(c[1]) >= k
    if long_c:
        last = c[3]  # ψ2's own, already minimised, last words
    else:
        last = (tuple(a[3]) if a else ()) + e + (c[1] if c else ())
        last = last[-k:]
        if minimize and (bos_tape or len(first) >= k):
            last, charged = minimise(problem, last)
            events += charged
    s = a[0] if a else opt.s
    t = c[2] if c else opt.t
    return (s, first, t, last), tuple(events)


def event_score(problem: SearchProblem, events: tuple[Event, ...]) -> float:
    total = 0.0
    for context, w in events:
        total += problem.backoff(context) if w is None else problem.ngram(context, w)
    return total


def expand_ngram(problem: SearchProblem, j: int, sigs: NSigs, minimize: bool = True) -> Iterator[tuple]:
    """Every valid transition from ``(j, sigs)``; the same contract as ``signature.expand``."""
    d, end, eta = problem.d, problem.end, problem.eta
    r = len(sigs)
    for t, opts in problem.grouped[j + 1]:
        if t == end:
            if r == 1 and end - sigs[0][2] - 1 <= d:
                a = sigs[0]
                for opt in opts:
                    new, score = joined(problem, a, opt, None, minimize)
                    yield t, (new,), opt.score + score - signature.final_charge(problem, end - a[2] - 1), opt, a[0], PHI
            continue
        for k1, k2 in role_choices(sigs, j, t, d):
            a = sigs[k1] if k1 != PHI else None
            c = sigs[k2] if k2 != PHI else None
            rest = [sg for k, sg in enumerate(sigs) if k != k1 and k != k2]
            jumps = (j - a[2] if a else 0) + (t + 1 - c[0] if c else 0)
            for opt in opts:
                new, score = joined(problem, a, opt, c, minimize)
                yield (
                    t,
                    tuple(sorted(rest + [new])),
                    opt.score + score - eta * jumps,
                    opt,
                    a[0] if a else PHI,
                    c[0] if c else PHI,
                )


def joined(problem: SearchProblem, a: NSig | None, opt: Option, c: NSig | None, minimize: bool = True) -> tuple[NSig, float]:
    """:func:`join` with its events scored, cached in the problem's ``joins`` (a JoinCache)."""
    key = (id(opt), a, c, minimize)
    got = problem.joins.get(key)
    if got is None:
        new, events = join(problem, a, opt, c, minimize)
        got = problem.joins[key] = (new, event_score(problem, events))
    return got


def state_space(problem: SearchProblem, minimize: bool = True):
    """``(start, goal, expand)`` for the problem's LM order: the bigram signatures of
    :mod:`.signature` (Figure 4 verbatim, fastest) for order 2, ``(s, F, t, L)`` otherwise.

    With a lexicalized reordering model each signature also carries its tape's LR ends
    (:mod:`.reordering`: ``(…, head, tail)``) and each transition its LR charge. Under Moses'
    distortion semantics each signature ends with its tape's gap entries (:mod:`.gaprule`:
    ``(…, M, lo)``), and only the transitions that keep Moses' gap rule remain."""
    if problem.order == 2:
        start, goal, expand = signature.start_state(problem), signature.goal_state(problem), signature.expand
    else:
        start, goal = start_state(problem), goal_state(problem)
        expand = lambda p, j, sigs: expand_ngram(p, j, sigs, minimize)  # noqa: E731
    if problem.reordering is not None:
        start, goal, expand = _wrapped(problem, reordering, start, goal, expand)
    if problem.semantics == "moses":
        start, goal, expand = _wrapped(problem, gaprule, start, goal, expand)
    return start, goal, expand


def _wrapped(problem: SearchProblem, layer, start, goal, expand):
    """``(start, goal, expand)`` of a layer (:mod:`.reordering` or :mod:`.gaprule`) over a space."""
    return (
        layer.start_state(problem, start),
        layer.goal_state(problem, goal),
        lambda p, j, sigs: layer.expand(p, j, sigs, expand),
    )
