"""Moses' XML-RPC protocol (mosesserver's ``translate`` at ``/RPC2``), parsed through defusedxml.

The request is one struct (moses/server/TranslationRequest.cpp, ``parse_request``):

* ``text`` (a string, required): the sentence;
* ``align``, ``word-align``, ``nbest-distinct``, ``report-all-factors``: flags, on when the key is
  present whatever its value (mosesserver's ``check``; its ``contrib/server/client.py`` sends
  ``"align": "true"``, and ``False`` switches nothing off);
* ``nbest`` (an int >= 0): the n-best list's size (0: none).

The reply is a struct (``pack_hypothesis``, ``outputNBest``, ``add_phrase_aln_info`` and
``Hypothesis::OutputLocalWordAlignment``): ``text``, the best translation with every word followed
by a space; with ``align`` the phrases in target order as ``{tgt-start, src-start, src-end}``;
with ``word-align`` the word alignment as ``{source-word, target-word}``; with ``nbest`` the list
of ``{hyp, totalScore, fvals}`` (and ``align``, ``word-align`` as asked), ``hyp`` written as
``text``, ``fvals`` as Moses' n-best feature field. Every other key mosesserver reads is refused
by name (:data:`UNSUPPORTED`), as is any key it does not know: never silently ignored.
"""

from __future__ import annotations

import xmlrpc.client
from dataclasses import dataclass
from typing import Any, Callable

from defusedxml.xmlrpc import DefusedExpatParser

from fstdecode.decoder import DecodeResult, Derivation
from fstdecode.server.limits import (
    FAULT_INTERNAL, FAULT_NO_METHOD, FAULT_PARSE, FAULT_REFUSED, RequestError, RequestLimits, check_nbest, check_text,
)

#: The request keys this server reads.
FLAGS = ("align", "word-align", "nbest-distinct", "report-all-factors")
KEYS = ("text", "nbest", *FLAGS)

#: Keys mosesserver reads that fstdecode does not implement, and what each asks for.
UNSUPPORTED = {
    "sg": "the search graph",
    "topt": "the translation options",
    "add-score-breakdown": "the score breakdown (fstdecode's n-best entries always carry fvals)",
    "lambda": "multi-model weights",
    "model_name": "a multi-model phrase table",
    "context": "a context string",
    "context-scope": "context-scope values",
    "context-weights": "context weights",
    "session-id": "sessions",
    "weights": "feature weights per request",
    "bias": "a sampling bias",
    "no-ReportSegmentation": "segmentation switches",
}

#: The content type of every reply (XML-RPC's).
CONTENT_TYPE = "text/xml; charset=utf-8"


@dataclass(frozen=True)
class TranslateCall:
    """A checked ``translate`` request. Invariant: ``text`` passed :func:`check_text`; ``nbest >= 0``."""

    text: str
    nbest: int = 0
    align: bool = False
    word_align: bool = False
    distinct: bool = False


def parse_call(body: bytes) -> tuple[str, tuple[Any, ...]]:
    """``(method name, params)`` of an XML-RPC call, parsed by defusedxml's expat parser (no
    DTD, no entity, no external reference); RequestError (fault -503) naming what is malformed."""
    unmarshaller = _Unmarshaller()
    parser = DefusedExpatParser(unmarshaller, forbid_dtd=True)
    try:
        parser.feed(body)
        parser.close()
        params = unmarshaller.close()
    except RequestError:
        raise
    except xmlrpc.client.Fault:
        raise RequestError("malformed XML-RPC request: a fault is a reply, not a call", 400, FAULT_PARSE) from None
    except Exception as e:  # expat's, defusedxml's and the unmarshaller's errors alike: untrusted input
        raise RequestError(f"malformed XML-RPC request: {_reason(e)}", 400, FAULT_PARSE) from None
    method = unmarshaller.getmethodname()
    if method is None:
        raise RequestError("malformed XML-RPC request: not a methodCall", 400, FAULT_PARSE)
    return method, params


class _Unmarshaller(xmlrpc.client.Unmarshaller):
    """The standard unmarshaller, but a struct that names a member twice is refused (the standard one
    keeps the last value, the JSON API refuses a repeated key: both protocols refuse it alike)."""

    def _end_struct(self, data: str) -> None:
        names = self._stack[self._marks[-1]::2]  # (the members, name and value in turn, since the mark)
        repeated = next((name for i, name in enumerate(names) if name in names[:i]), None)
        if repeated is not None:
            raise RequestError(f"the struct member {repeated!r} is given twice", 400, FAULT_PARSE)
        xmlrpc.client.Unmarshaller.end_struct(self, data)

    dispatch = {**xmlrpc.client.Unmarshaller.dispatch, "struct": _end_struct}


def _reason(e: Exception) -> str:
    """A parse error's reason, on one line and short (it is logged and sent back)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def translate_call(method: str, params: tuple[Any, ...], limits: RequestLimits,
                   default_nbest: tuple[int, bool] = (0, False)) -> TranslateCall:
    """The ``translate`` request of a call, checked; RequestError naming the first problem.
    ``default_nbest``: the n-best size and distinctness of a request that gives no ``nbest`` (and
    no ``nbest-distinct``), as mosesserver takes them from its moses.ini's ``[n-best-list]``."""
    if method != "translate":
        raise RequestError(f"no method {method!r} on this server; it serves 'translate'", 400, FAULT_NO_METHOD)
    if len(params) != 1 or not isinstance(params[0], dict):
        raise RequestError("translate takes one parameter, a struct (text, align, nbest ...)")
    request = params[0]
    unsupported = [k for k in request if k in UNSUPPORTED]
    if unsupported:
        named = "; ".join(f"{k!r} ({UNSUPPORTED[k]})" for k in unsupported)
        raise RequestError(f"unsupported parameter(s) {named}: fstdecode's server does not implement them",
                           400, FAULT_REFUSED)
    unknown = [k for k in request if k not in KEYS]
    if unknown:
        raise RequestError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; translate takes "
                           f"{', '.join(KEYS)}", 400, FAULT_REFUSED)
    if "text" not in request:
        raise RequestError("missing source text: translate needs a 'text' member", 400, FAULT_PARSE)
    text = check_text(request["text"], "text")
    nbest = check_nbest(request["nbest"], "nbest", limits) if "nbest" in request else default_nbest[0]
    distinct = "nbest-distinct" in request or default_nbest[1]
    return TranslateCall(text, nbest, "align" in request, "word-align" in request, distinct)


def surface(d: Derivation) -> str:
    """Moses' target string: every word followed by a space (``OutputSurface``)."""
    return "".join(w + " " for p in d.phrases for w in p.target)


def phrase_alignment(d: Derivation) -> list[dict[str, int]]:
    """``align``: each phrase in target order, ``{tgt-start, src-start, src-end}`` (0-based, inclusive)."""
    out, k = [], 0
    for p in d.phrases:
        out.append({"tgt-start": k, "src-start": p.start, "src-end": p.end})
        k += len(p.target)
    return out


def word_alignment(d: Derivation) -> list[dict[str, int]]:
    """``word-align``: the word alignment's points, phrase by phrase (:meth:`Derivation.alignment`)."""
    return [{"source-word": s, "target-word": t} for s, t in d.alignment()]


def translate_reply(
    result: DecodeResult, call: TranslateCall, scores: Callable[[Derivation], tuple[str, float]]
) -> dict[str, Any]:
    """The reply struct of ``result`` (module docstring); RequestError (fault -500) when the line
    has no derivation, with the decoder's reason (mosesserver would send an empty text)."""
    best = result.best
    if best is None:
        raise RequestError(f"no translation: {result.error or result.reason}", 422, FAULT_INTERNAL)
    reply: dict[str, Any] = {"text": surface(best)}
    reply.update(_alignments(best, call))
    if call.nbest:
        # In the order of the totals given, as Moses ranks its paths by its float totals (stable:
        # equal totals keep the search's order), as fstdecode moses writes its lists.
        # Each derivation's fields in Moses' float arithmetic, from the core, where it wrote them.
        fields = result.nbest_fields or [scores(d) for d in result.derivations]
        scored = list(zip(result.derivations[: call.nbest], fields))
        scored.sort(key=lambda entry: -entry[1][1])
        reply["nbest"] = [_nbest_entry(d, call, fvals, total) for d, (fvals, total) in scored]
    return reply


def _alignments(d: Derivation, call: TranslateCall) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if call.align:
        out["align"] = phrase_alignment(d)
    if call.word_align:
        out["word-align"] = word_alignment(d)
    return out


def _nbest_entry(d: Derivation, call: TranslateCall, fvals: str, total: float) -> dict[str, Any]:
    return {"hyp": surface(d), "totalScore": total, "fvals": fvals, **_alignments(d, call)}


def reply_body(reply: dict[str, Any]) -> bytes:
    """A methodResponse holding ``reply``, UTF-8."""
    return xmlrpc.client.dumps((reply,), methodresponse=True, encoding="utf-8").encode("utf-8")


def fault_body(code: int, message: str) -> bytes:
    """A methodResponse holding a fault, UTF-8."""
    return xmlrpc.client.dumps(xmlrpc.client.Fault(code, message), methodresponse=True, encoding="utf-8").encode("utf-8")
