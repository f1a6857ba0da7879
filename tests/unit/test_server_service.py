"""The server's model service (fstdecode.server.service), Decoder.variant (the decoders it keeps
share one table in the core), the worker pool, and serve's per-method options and budgets."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from fstdecode.cli.serve import SERVE_MAX_STATES, method_options_for
from fstdecode.decoder import DecodeError, Decoder
from fstdecode.search.base import METHODS
from fstdecode.server import service as service_module
from fstdecode.server.limits import Admission, Busy
from fstdecode.server.pool import Error as PoolError
from fstdecode.server.pool import WorkerPool
from fstdecode.server.service import LineRequest, Service

from serving import LINES, SENTENCE, example_setup, load_example


@pytest.fixture(scope="module")
def model():
    return load_example()


def test_a_variant_shares_the_table_and_decodes_as_a_fresh_decoder(model):
    base = Decoder(model, "stack")
    options = METHODS["exact"].options(nbest=3)
    variant = base.variant("exact", options)
    assert variant.method == "exact" and variant.options == options
    assert variant._phrase_scores is base._phrase_scores  # one table in the core, not a copy per decoder
    fresh = Decoder(model, "exact", options)
    for line in LINES:
        got, want = variant.decode(line), fresh.decode(line)
        assert [(d.translation, d.score) for d in got.derivations] == [(d.translation, d.score) for d in want.derivations]
    assert base.method == "stack" and base.decode(SENTENCE).best.translation == "this must also be our concern"


@pytest.mark.parametrize("method, options, message", [
    ("magic", METHODS["stack"].options(), "unknown method 'magic'"),  # refused by __init__, with its message
    ("exact", METHODS["stack"].options(), "--method exact takes ExactOptions, not StackOptions"),
])
def test_a_bad_variant_is_refused_as_init_refuses_it(model, method, options, message):
    with pytest.raises(DecodeError, match=message):
        Decoder(model, "stack").variant(method, options)


def test_an_xml_decoder_has_no_fst_variant(model):
    with pytest.raises(DecodeError, match="not supported by --method fst"):
        Decoder(model, "stack", xml_input="exclusive").variant("fst", METHODS["fst"].options())


def test_one_decoder_decodes_in_many_threads_as_in_one(model):
    # What the server relies on: a decoder shared by its threads (the searches keep no state).
    for method in ("stack", "exact"):
        decoder = Decoder(model, method, nbest=2)
        serial = {line: [(d.translation, d.score) for d in decoder.decode(line).derivations] for line in LINES}
        found: list[tuple[str, list]] = []

        def work(k: int) -> None:
            for i in range(30):
                line = LINES[(k + i) % len(LINES)]
                found.append((line, [(d.translation, d.score) for d in decoder.decode(line).derivations]))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(found) == 120 and all(got == serial[line] for line, got in found)


def test_the_service_keeps_a_bounded_set_of_decoders(monkeypatch):
    monkeypatch.setattr(service_module, "DECODERS_KEPT", 3)
    service = Service(example_setup())
    first = service.decoder(LineRequest("stack", 2))
    assert service.decoder(LineRequest("stack", 2)) is first  # made once
    assert service.decoder(LineRequest("stack", 1, distinct=True)) is service.base  # distinct means nothing for 1
    for k in (3, 4, 5):
        service.decoder(LineRequest("exact", k))
    assert len(service._decoders) == 3 and service.decoder(LineRequest("stack", 2)) is not first
    assert service.decoder(LineRequest("exact", 4)).options.nbest == 4
    assert service.decoder(LineRequest("exact", 4)).options.max_states == SERVE_MAX_STATES


def test_serve_lowers_every_budget_to_its_cap_unless_given():
    options = method_options_for(("stack", "exact", "dp"))
    assert {m: o.max_states for m, o in options.items()} == {
        "stack": SERVE_MAX_STATES, "exact": SERVE_MAX_STATES, "dp": METHODS["dp"].options().max_states}
    assert all(o.max_states <= SERVE_MAX_STATES for o in options.values())
    given = method_options_for(("stack", "exact"), {"max_states": 5_000_000, "beam_size": 7})
    assert given["exact"].max_states == 5_000_000 and given["stack"] == replace(
        METHODS["stack"].options(), max_states=5_000_000, beam_size=7)


def test_the_pool_releases_each_sentence_once_and_refuses_after_shutdown():
    service = Service(example_setup())
    pool = WorkerPool(2, Admission(4, 1))
    futures = pool.submit(service, ["das muss", "sein", "unsere sorge"], LineRequest("stack"))
    assert [f.result(30).best.translation for f in futures] == ["this must", "be", "our concern"]
    pool.shutdown(wait=True)
    assert pool.admission.admitted == 0 and pool.running == 0
    with pytest.raises(PoolError, match="shutting down"):
        pool.submit(service, ["das"], LineRequest("stack"))
    assert pool.admission.admitted == 0
    with pytest.raises(Busy):
        full = Admission(1, 1)
        full.admit(1)
        WorkerPool(1, full).submit(service, ["das"], LineRequest("stack"))
