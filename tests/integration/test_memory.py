"""Resident memory stays flat over 1,000 sentences decoded in one process (native engine), and over
2,000 with the fst method (the cascade).

Each case decodes the 48 Hansards lines, cycled, 1,000 times with one :class:`Decoder`, in a
fresh Python process (so that nothing pytest or an earlier test allocated moves the numbers),
and compares the resident set size after a warm-up with the one at the end. A leak of even a
few KB per sentence, in the native core or in the Python around it, grows the RSS by megabytes
over the measured sentences; the allocator's own caching is taken out of the reading (see
``SCRIPT``). Skipped with a reason on a machine without ../shared/data or without /proc.

The detector was checked by hand, with a deliberate leak added to SCRIPT and removed again:
keeping a 4 KB ``bytearray`` per sentence in a module-level list (filled, so that its pages are
touched) made every case fail with 3.6 MB of growth, a 1.2 KB one with 1.08 MB, and keeping
each DecodeResult alive with 1.4-1.6 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from shared import ROOT, data_path

#: Sentences decoded before the first reading: more than the 48 input lines, so that the
#: per-model caches (phrase scores shared by every sentence, interned strings) are full and the
#: allocator has reached its working size before we start measuring.
WARM_UP = 100
#: Sentences in all, the acceptance item's "1,000 sentences in one process".
SENTENCES = 1_000

#: Allowed RSS growth from the end of the warm-up to the end (1 MiB). Measured growth on the
#: Hansards model: 12-20 KB for the three cases here, under 100 KB in every variant tried (a
#: few pages of Python objects, not proportional to the number of sentences). A leak of 4 KB
#: per sentence adds 900 x 4 KB = 3.6 MB and one of 1.2 KB already 1.05 MB, both over this
#: bound, which still leaves ten times the largest observed growth as margin against noise.
MAX_GROWTH = 1 << 20

# Run as ``python -c SCRIPT CONFIG`` (CONFIG: the JSON that :func:`measure` builds); prints one JSON line.
# Before each reading it collects garbage and calls glibc's malloc_trim(0), which hands free
# heap pages back to the kernel: without it the reading measures what glibc keeps cached,
# which swung by +-5 MB between readings for the coverage DP with a 20,000-state budget (its
# large per-sentence tables are freed but not always returned), far more than a small leak.
# Live memory cannot be trimmed, so a leak still shows in full.
SCRIPT = r"""
import ctypes, gc, itertools, json, os, sys

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model

config = json.loads(sys.argv[1])
try:
    _trim = ctypes.CDLL(None).malloc_trim  # glibc only; elsewhere the readings include its caches
except AttributeError:
    _trim = None
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    gc.collect()
    if _trim is not None:
        _trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


model = load_model(**config["model"])
decoder = Decoder(model, config["method"], **config["options"])
lines = open(config["input"], encoding="utf-8").read().splitlines()
readings, failed, over_budget = {}, [], 0
for k, line in zip(range(config["sentences"]), itertools.cycle(lines)):
    result = decoder.decode(line, k)
    if result.best is None:
        failed.append((k, result.error or result.reason))
    over_budget += result.reason is not None
    if k + 1 == config["warm_up"] or (k + 1) % 100 == 0:
        readings[k + 1] = rss()
print(json.dumps({"engine": "native", "readings": readings, "failed": failed[:5],
                  "over_budget": over_budget, "trimmed": _trim is not None}))
"""


def measure(
    method: str, options: dict, *, model: dict | None = None, input: str | None = None,
    sentences: int = SENTENCES, warm_up: int = WARM_UP,
) -> dict:
    """Run SCRIPT for ``method`` in a fresh process; its JSON report, with ``readings`` keyed by int.

    ``model`` (load_model's arguments) and ``input`` (a file of lines, cycled) default to the
    Hansards model and its 48 lines.
    """
    if model is None:
        model = dict(
            phrase_table=str(data_path("hansards-fr-en-decoder", "tm")),
            tm_score_format="log10",
            lm=str(data_path("english-lm-un", "lm.en.arpa")),
            lm_order=3,
            distortion_limit=4,
            table_limit=20,
        )
    config = {
        "model": model,
        "input": input or str(data_path("hansards-fr-en-decoder", "input")),
        "method": method,
        "options": options,
        "sentences": sentences,
        "warm_up": warm_up,
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(config)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    report["readings"] = {int(k): v for k, v in report["readings"].items()}
    return report


# stack: the default method (--method stack), native, with its default beam.
# beam: the native signature beam; a beam of 20 instead of 100 keeps the case at ~5 ms a
#   sentence (5 s in all) and runs the same native code per sentence.
# coverage: the native coverage DP with a small state budget, so that most lines go over it
#   (the over-budget path: the best derivation found or the stack decoder's) and the shortest
#   finish within it; 5,000 states keep the case near 17 ms a sentence.
CASES = {
    "stack": {},
    "beam": {"beam_size": 20},
    "coverage": {"max_states": 5_000},
}


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the RSS from /proc/self/statm (Linux)")
@pytest.mark.parametrize("method", list(CASES))
def test_rss_is_flat_over_1000_sentences(method: str) -> None:
    report = measure(method, CASES[method])
    assert report["engine"] == "native"
    assert report["failed"] == [], report["failed"]
    if method == "coverage":  # both paths are exercised, over the budget and within it
        assert 0 < report["over_budget"] < SENTENCES, report["over_budget"]
    readings = report["readings"]
    growth = readings[SENTENCES] - readings[WARM_UP]
    mib = {k: round(v / 2**20, 2) for k, v in sorted(readings.items())}
    assert growth < MAX_GROWTH, f"RSS grew by {growth / 1024:.0f} KB after the warm-up; MiB by sentence: {mib}"


#: The fst case's sentences: the issue's "flat over 2,000 sentences"; warm-up: the first 500,
#: over which the readings still rose (by ~0.4 MB, the allocator and the per-model caches
#: reaching their working size) before staying within 10 KB to 4,000 sentences.
FST_SENTENCES, FST_WARM_UP = 2_000, 500


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the RSS from /proc/self/statm (Linux)")
def test_rss_is_flat_over_2000_sentences_fst_with_unknown_words(tmp_path) -> None:
    """The fst method (the cascade), on the built-in example (fast: ~4 ms a sentence) with eight
    unknown words in every line: each line's unknown-word phrase pairs are new objects, whose
    labels the Cascade once kept for good (see test_fst's check on ``Cascade.labels``). 97
    distinct lines, cycled."""
    base = "das muss unsere sorge gleichermaßen sein".split()
    lines = [" ".join(base[:3] + [f"unk{k}w{j}" for j in range(8)] + base[3:]) for k in range(97)]
    source = tmp_path / "input.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = measure("fst", {}, model={}, input=str(source), sentences=FST_SENTENCES, warm_up=FST_WARM_UP)
    assert report["failed"] == [], report["failed"]
    readings = report["readings"]
    growth = readings[FST_SENTENCES] - readings[FST_WARM_UP]
    mib = {k: round(v / 2**20, 2) for k, v in sorted(readings.items())}
    assert growth < MAX_GROWTH, f"RSS grew by {growth / 1024:.0f} KB after the warm-up; MiB by sentence: {mib}"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the RSS from /proc/self/statm (Linux)")
def test_pool_worker_rss_is_flat_over_2000_sentences(tmp_path) -> None:
    """A local pool worker (one, so that it decodes every line) over 2,000 example sentences with
    unknown words, in chunks of 16: the pipes and chunks leave nothing behind in the worker.
    The same warm-up and bound as the fst case (the decoding there is the same)."""
    from faulty import RssProbe

    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model
    from fstdecode.run import ProcessRunner, decode_lines

    base = "das muss unsere sorge gleichermaßen sein".split()
    lines = [" ".join(base[:3] + [f"unk{k % 97}w{j}" for j in range(8)] + base[3:]) for k in range(FST_SENTENCES)]
    probe = RssProbe(Decoder(load_model(), "stack"), tmp_path / "rss", at=(FST_WARM_UP - 1, FST_SENTENCES - 1))
    out = list(decode_lines(probe, lines, ProcessRunner(1, chunk_size=16)))
    assert [r.id for r in out] == list(range(FST_SENTENCES))
    readings = [line.split() for line in (tmp_path / "rss").read_text().splitlines()]
    assert len(readings) == 2 and readings[0][1] == readings[1][1]  # one worker, never replaced
    growth = int(readings[1][2]) - int(readings[0][2])
    assert growth < MAX_GROWTH, f"the worker's RSS grew by {growth / 1024:.0f} KB after the warm-up"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the RSS from /proc/self/statm (Linux)")
def test_dask_worker_rss_is_flat_over_2000_sentences(tmp_path) -> None:
    """The same on a Dask LocalCluster of one worker, with glibc's own malloc trim threshold (the
    runner unsets Dask's MALLOC_TRIM_THRESHOLD_): the plugin, the pickled chunks and the worker's
    bookkeeping leave nothing behind that grows with the sentences. Chunks of 16 lines, as the
    pool's: the readings are taken mid-chunk, so automatically sized chunks (hundreds of these
    fast lines by the end) would add their own results to the second reading, a working set
    bounded by the chunk size (3.9 MB here at up to 4,096 lines), not a leak."""
    pytest.importorskip("distributed", reason="the Dask runner needs the cluster extra: pip install 'fstdecode[cluster]'")
    from faulty import RssProbe

    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model
    from fstdecode.run import decode_lines
    from fstdecode.run.dask import ClusterSpec, DaskRunner

    base = "das muss unsere sorge gleichermaßen sein".split()
    lines = [" ".join(base[:3] + [f"unk{k % 97}w{j}" for j in range(8)] + base[3:]) for k in range(FST_SENTENCES)]
    probe = RssProbe(Decoder(load_model(), "stack"), tmp_path / "rss", at=(FST_WARM_UP - 1, FST_SENTENCES - 1))
    with DaskRunner(ClusterSpec(local_workers=1), chunk_size=16) as runner:
        out = list(decode_lines(probe, lines, runner))
    assert [r.id for r in out] == list(range(FST_SENTENCES))
    readings = [line.split() for line in (tmp_path / "rss").read_text().splitlines()]
    assert len(readings) == 2 and readings[0][1] == readings[1][1]  # one worker, never replaced
    growth = int(readings[1][2]) - int(readings[0][2])
    assert growth < MAX_GROWTH, f"the Dask worker's RSS grew by {growth / 1024:.0f} KB after the warm-up"
