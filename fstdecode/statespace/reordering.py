"""Lexicalized reordering in the signature state space (issue 13).

In a signature state a tape is a phrase sequence whose neighbours in target
order are not known yet, so the orientation of its first phrase (relative to
whatever will precede it) and the orientation of whatever will follow its
last phrase are decided by later transitions. With a reordering model each
signature therefore carries two more entries, ``(…, head, tail)``:

* ``head``: its first phrase's pending backward charge, ``(t_first, back)``
  (that phrase's end and its weighted backward row); None for the tape
  that starts with ``<s>``, whose first phrase has nothing pending;
* ``tail``: its last phrase, ``(s_last, next)`` (its start and its weighted
  forward row, charged for the orientation of whatever follows); None while
  the tape is ``<s>`` alone (what follows is the first phrase, with the
  sentence-start orientation and no forward charge) and once it ends with
  ``</s>`` (nothing follows).

The start of the first phrase and the end of the last are the tape's own
``s`` and ``t``. ``t_first`` and ``s_last`` are kept only for the orientation
classes that read them (``msd`` and ``mslr`` test swaps; ``monotonicity`` and
``leftright`` compare the previous end with the next start alone), else 0, so
equivalent states merge.

A transition ψ1 p ψ2 then charges exactly (:func:`charge`):
backward(p | ψ1's last, or the sentence start when ψ1 is ``<s>`` alone) and
forward(ψ1's last | p) when ψ1 is a tape; backward(ψ2's first | p) and
forward(p | ψ2's first) when ψ2 is a tape; p's own backward waits in the
new tape's head when ψ1 is φ. Nothing is charged into ``</s>``. Every phrase
is thus charged once for its orientation, by the transition that fixes its
predecessor, as :meth:`~fstdecode.problem.problem.SearchProblem.reordering_score`
charges it along the target order: the signature searches stay exact.

Without a reordering model nothing here is used and signatures keep their
four entries (the state counts do not change).

The native core carries the same ends beside each signature (``Ends`` in
``native/statespace.h``: a head's row and a tail's row as ids shared by equal
rows, so that its states merge exactly where these do) and charges the same
scores in the same order of operations, in its dp, beam, bounded and R.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fstdecode.model.lexical_reordering import first_orientation, orientation
from fstdecode.problem.problem import Option, SearchProblem
from fstdecode.statespace.signature import PHI

#: ``(t_first, weighted backward row)`` of a tape's first phrase, or None (the ``<s>`` tape).
Head = tuple[int, tuple[float, ...]] | None
#: ``(s_last, weighted forward row)`` of a tape's last phrase, or None (``<s>`` alone, or ended by ``</s>``).
Tail = tuple[int, tuple[float, ...]] | None


def inner_spans(problem: SearchProblem) -> bool:
    """Do the orientations read a first phrase's end and a last phrase's start (msd, mslr)?"""
    return problem.reordering.config.classes in ("msd", "mslr")


def head_of(problem: SearchProblem, opt: Option) -> Head:
    """The head of a tape that starts with ``opt`` (its backward charge pending)."""
    return (opt.t if inner_spans(problem) else 0, opt.lr_back)


def tail_of(problem: SearchProblem, opt: Option) -> Tail:
    """The tail of a tape that ends with ``opt``."""
    return (opt.s if inner_spans(problem) else 0, opt.lr_next)


def _orient(problem: SearchProblem, prev: tuple[int, int] | None, cur: tuple[int, int]) -> int:
    """The orientation of span ``cur`` after span ``prev`` (None: the sentence start), search positions."""
    cfg = problem.reordering.config
    if prev is None:
        return first_orientation(cfg, cur[0] - 1)
    return orientation(cfg, prev, cur)


def after_tail(problem: SearchProblem, tail: Tail, t_prev: int, opt: Option) -> tuple[int, float]:
    """The orientation of ``opt`` placed right after a tape with ``tail`` ending at ``t_prev``,
    and the charge: ``opt``'s backward score of it, plus the tape's last phrase's forward score."""
    if tail is None:
        o = _orient(problem, None, (opt.s, opt.t))
        return o, (opt.lr_back[o] if opt.lr_back else 0.0)
    s_last, nxt = tail
    o = _orient(problem, (s_last, t_prev), (opt.s, opt.t))
    return o, (opt.lr_back[o] if opt.lr_back else 0.0) + (nxt[o] if nxt else 0.0)


def before_head(problem: SearchProblem, opt: Option, head: Head, s_next: int) -> tuple[int, float]:
    """The orientation of a tape's first phrase (``head``, starting at ``s_next``) placed right
    after ``opt``, and the charge: that phrase's pending backward score plus ``opt``'s forward score."""
    t_first, back = head
    o = _orient(problem, (opt.s, opt.t), (s_next, t_first))
    return o, (back[o] if back else 0.0) + (opt.lr_next[o] if opt.lr_next else 0.0)


def charge(problem: SearchProblem, a: tuple | None, opt: Option, c: tuple | None) -> tuple[int, int, float]:
    """The reordering charge of the transition ψ1 p ψ2 (``a``/``c`` the LR signatures of ψ1 and ψ2,
    None for φ): ``(orientation of p or PHI, orientation of ψ2's first or PHI, weighted score)``.

    ``</s>`` (``opt.s == problem.end``) charges nothing."""
    if opt.s == problem.end:
        return PHI, PHI, 0.0
    o1 = o2 = PHI
    score = 0.0
    if a is not None:
        o1, v = after_tail(problem, a[5], a[2], opt)
        score += v
    if c is not None:
        o2, v = before_head(problem, opt, c[4], c[0])
        score += v
    return o1, o2, score


def start_state(problem: SearchProblem, base: tuple) -> tuple:
    """The start signatures with their LR ends: the ``<s>`` tape, nothing pending, ``<s>`` alone."""
    return tuple(sg + (None, None) for sg in base)


def goal_state(problem: SearchProblem, base: tuple) -> tuple:
    """The goal signatures with their LR ends: nothing pending, nothing follows ``</s>``."""
    return tuple(sg + (None, None) for sg in base)


def expand(
    problem: SearchProblem, j: int, sigs: tuple, base: Callable[[SearchProblem, int, tuple], Iterator[tuple]]
) -> Iterator[tuple]:
    """The transitions of ``base`` (an expand of :mod:`.signature` or :mod:`.ngram`) from the LR
    state ``(j, sigs)``: the same roles and validity (the LR ends change neither), each new tape
    with its head and tail, each score plus :func:`charge`. The contract of ``signature.expand``."""
    plain = tuple(sg[:4] for sg in sigs)
    by_start = {sg[0]: sg for sg in sigs}
    end = problem.end
    for t, new, delta, opt, s1, s2 in base(problem, j, plain):
        if t == end:
            yield t, tuple(sg + (None, None) for sg in new), delta, opt, s1, s2
            continue
        a = by_start.get(s1)
        c = by_start.get(s2)
        _, _, lr = charge(problem, a, opt, c)
        if a is None:
            start, head = opt.s, head_of(problem, opt)
        else:
            start, head = s1, a[4]
        tail = c[5] if c is not None else tail_of(problem, opt)
        out = tuple(sg + ((head, tail) if sg[0] == start else by_start[sg[0]][4:]) for sg in new)
        yield t, out, delta + lr, opt, s1, s2


def best(row: tuple[float, ...]) -> float:
    """The most a row can add (0 for an empty row: no such direction)."""
    return max(row) if row else 0.0


def pending_bound(sigs: tuple) -> float:
    """An upper bound on the charges the state's tapes still owe: each head's best backward score
    (its predecessor is not placed yet) and each tail's best forward score, or 0 (a tape's last
    phrase may end up before ``</s>``, which charges nothing)."""
    total = 0.0
    for sg in sigs:
        head, tail = sg[4], sg[5]
        if head is not None:
            total += best(head[1])
        if tail is not None:
            total += max(0.0, best(tail[1]))
    return total


def phrase_bound(opt: Option) -> float:
    """An upper bound on what a phrase not placed yet will be charged: its best backward score,
    and its best forward score or 0 (when it ends up last)."""
    return best(opt.lr_back) + max(0.0, best(opt.lr_next))
