"""The tuning loop: decode the dev set to n-best lists with the model loaded once, merge them,
optimize the weights, and again, until ``mert-moses.pl`` would stop.

Iteration k (1, 2, ...) decodes every dev line with the weights of iteration k - 1 (the model's
own for k = 1) into its n-best list (the core's Moses lines), adds the lists to the pool (each
distinct entry once), and runs the optimizer on the whole pool from those weights. The run stops
after ``max_iterations``, when an iteration adds no new entry, or when no weight moved by
``min_change`` or more (``mert-moses.pl``'s three rules). A line that fails to decode is reported
and left out of the pool and of every metric (never counted as an empty translation).

Every iteration's decoded lists and weights are kept in the working folder, with the settings
of the run; ``resume`` replays the iterations found there and goes on, so that an interrupted
run ends where an uninterrupted one ends: the decoder is deterministic, and iteration k's random
draws come from a generator seeded with (seed, k) alone.

Invariant: after iteration k, ``state.iterations[k - 1].weights`` are the optimizer's weights,
the ones iteration k + 1 decodes with; at the end, the last optimizer's weights (if they moved)
are decoded once more, and the weights written are the best-scoring of all those decoded with.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import read_lines
from fstdecode.model.features import Weights
from fstdecode.tune import mert, mira
from fstdecode.tune.metric import Metric, MetricSettings
from fstdecode.tune.pool import NbestPool
from fstdecode.tune.space import WeightSpace

#: The optimizers ``--optimizer`` offers (PRO is not built).
OPTIMIZERS = ("mert", "mira")
#: The files of a working folder.
SETTINGS_FILE = "run.json"
LOG_FILE = "log.json"
LAST_FILE = "last.json"


class TuneError(FstdecodeError):
    """Tuning that cannot start or go on: bad dev data, a working folder of another run."""


@dataclass(frozen=True)
class TuneSettings:
    """How a run tunes (every field is part of the run's identity in its working folder)."""

    optimizer: str = "mert"
    metric: MetricSettings = field(default_factory=MetricSettings)
    nbest: int = 100
    distinct: bool = True
    max_iterations: int = 25
    min_change: float = 1e-5
    seed: int = 0
    mert: mert.MertSettings = field(default_factory=mert.MertSettings)
    mira: mira.MiraSettings = field(default_factory=mira.MiraSettings)


@dataclass(frozen=True)
class Iteration:
    """What iteration ``k`` did (one line of the JSON log)."""

    k: int
    decoded: float  # the metric of the 1-best of the lines that decoded, with the weights decoded with
    optimized: float  # the optimizer's metric on the pool, with its weights
    entries: int  # pool size after the iteration
    new: int  # entries it added
    moved: float  # largest change of a weight
    failed: int  # lines that did not decode
    seconds: float
    decode_seconds: float
    weights: tuple[float, ...]  # the optimizer's (decoded by iteration k + 1)
    decoded_with: tuple[float, ...]
    decoded_text: str = ""  # ``decoded`` as sacrebleu prints it


@dataclass
class TuneState:
    """The run so far: its iterations, in order, and the decode of the last optimizer's weights."""

    iterations: list[Iteration] = field(default_factory=list)
    stopped: str | None = None
    last: dict | None = None


@dataclass(frozen=True)
class Choice:
    """Weights the run decoded the dev set with, and what that scored."""

    weights: tuple[float, ...]
    decoded: float
    decoded_text: str
    source: str  # which decode: "iteration k", or the last optimizer's


def read_references(paths: Sequence[str], count: int) -> list[list[str]]:
    """Each dev line's references (one per file), read as every text file of the project is
    (:func:`~fstdecode.io.files.read_lines`: UTF-8, lines bounded, errors naming file and line),
    with ``count`` lines in each."""
    columns = []
    for path in paths:
        text = read_lines(path, TuneError)
        if len(text) != count:
            raise TuneError(f"{path}: {len(text)} reference line(s) for {count} dev line(s); give one reference line "
                            "per dev line")
        columns.append(text)
    return [list(refs) for refs in zip(*columns)]


def fingerprint(ini_text: str, dev: Sequence[str], references: Sequence[Sequence[str]],
                settings: TuneSettings) -> dict:
    """The identity of a run: what a working folder must match to be resumed."""
    digest = hashlib.sha256()
    for part in (ini_text, "\n".join(dev), "\n".join("\t".join(r) for r in references)):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return {"inputs": digest.hexdigest(), "settings": json.loads(json.dumps(asdict(settings)))}


class Tuner:
    """Tunes one model on one dev set (see the module docstring)."""

    def __init__(self, base: Weights, space: WeightSpace, decoder_for: Callable[[Weights], Decoder],
                 decode: Callable[[Decoder], list[DecodeResult]], dev: Sequence[str],
                 references: Sequence[Sequence[str]], settings: TuneSettings, work: str, identity: dict,
                 report: Callable[[str], None] = lambda _msg: None) -> None:
        if not dev:
            raise TuneError("the dev set is empty: tuning needs at least one line")
        if settings.optimizer not in OPTIMIZERS:
            raise TuneError(f"--optimizer {settings.optimizer}: choose {', '.join(OPTIMIZERS)}")
        self.base = base
        self.space = space
        self.decoder_for = decoder_for
        self.decode = decode
        self.settings = settings
        self.metric = Metric(settings.metric, references)
        self.pool = NbestPool(self.metric, space)
        self.work = work
        self.identity = identity
        self.report = report
        self.state = TuneState()

    # ---------------------------------------------------------------- the working folder

    def prepare(self, resume: bool) -> None:
        """Make the working folder, or check it holds this run (``resume``) and replay it."""
        os.makedirs(self.work, exist_ok=True)
        settings_path = os.path.join(self.work, SETTINGS_FILE)
        if os.path.exists(settings_path):
            with open(settings_path, encoding="utf-8") as f:
                found = json.load(f)
            if found != self.identity:
                raise TuneError(f"{self.work}: the working folder holds another run (other inputs or settings); "
                                "give another --working-dir, or remove this one")
            if not resume:
                raise TuneError(f"{self.work}: the working folder holds this run already; add --resume to go on "
                                "from it, or give another --working-dir")
            self._replay()
            return
        if any(os.scandir(self.work)):
            raise TuneError(f"{self.work}: the working folder is not empty and holds no run of fstdecode tune; "
                            "give an empty or new --working-dir")
        _write_json(settings_path, self.identity)

    def _nbest_path(self, k: int) -> str:
        return os.path.join(self.work, f"iter{k:02d}.nbest")

    def _record_path(self, k: int) -> str:
        return os.path.join(self.work, f"iter{k:02d}.json")

    def _replay(self) -> None:
        """The iterations the folder holds complete (its record written last), their lists pooled."""
        k = 1
        while os.path.exists(self._record_path(k)):
            with open(self._record_path(k), encoding="utf-8") as f:
                record = json.load(f)
            it = Iteration(**{**record, "weights": tuple(record["weights"]),
                              "decoded_with": tuple(record["decoded_with"])})
            with open(self._nbest_path(k), encoding="utf-8") as f:
                self._pool_text(f.read().splitlines(), self._nbest_path(k))
            self.state.iterations.append(it)
            self.report(f"iteration {k}: resumed from {self.work}")
            k += 1
        if self.state.iterations:
            self.state.stopped = self._stop_reason(self.state.iterations[-1])

    # ---------------------------------------------------------------- one iteration

    def current(self) -> np.ndarray:
        """The weights the next iteration decodes with."""
        if self.state.iterations:
            return np.array(self.state.iterations[-1].weights)
        return self.space.vector(self.base)

    def _pool_text(self, lines: Iterable[str], where: str) -> int:
        """Adds n-best lines (``id ||| words ||| fields ||| total``) to the pool; the new entries."""
        by_sentence: dict[int, list[tuple[str, np.ndarray]]] = {}
        for n, line in enumerate(lines, 1):
            parts = line.split(" ||| ")
            if len(parts) < 4:
                raise TuneError(f"{where}:{n}: not an n-best line 'id ||| words ||| features ||| total'")
            i = int(parts[0])
            if not 0 <= i < len(self.metric):
                raise TuneError(f"{where}:{n}: sentence {i} is not a dev line")
            by_sentence.setdefault(i, []).append((parts[1].strip(), self.space.parse_fields(parts[2], f"{where}:{n}")))
        return sum(self.pool.add(i, entries) for i, entries in by_sentence.items())

    def step(self) -> Iteration:
        """Run the next iteration and record it."""
        k = len(self.state.iterations) + 1
        start = time.perf_counter()
        w = self.current()
        weights = self.space.weights(w, self.base)
        lines, best, failed = self._decoded(weights, f"iteration {k}")
        decode_seconds = time.perf_counter() - start
        if not best:
            raise TuneError(f"iteration {k}: no dev line decoded (each failed; see the messages above)")
        path = self._nbest_path(k)
        _write_text(path, "".join(line + "\n" for line in lines))
        new = self._pool_text(lines, path)
        decoded, decoded_text = self.decoded_metric(best)
        rng = np.random.default_rng([self.settings.seed, k])
        arrays = self.pool.arrays()
        if self.settings.optimizer == "mert":
            tuned, optimized = mert.optimize(arrays, self.metric, w, self.settings.mert, rng)
        else:
            tuned, optimized = mira.optimize(arrays, self.metric, w, self.settings.mira, rng)
        moved = float(np.abs(tuned - w).max())
        it = Iteration(k, decoded, optimized, len(self.pool), new, moved, failed, time.perf_counter() - start,
                       decode_seconds, tuple(float(v) for v in tuned), tuple(float(v) for v in w), decoded_text)
        _write_json(self._record_path(k), asdict(it))
        self.state.iterations.append(it)
        self.state.stopped = self._stop_reason(it)
        return it

    def _decoded(self, weights: Weights, label: str) -> tuple[list[str], dict[int, str], int]:
        """The dev set decoded with ``weights``: every n-best line, each decoded line's 1-best
        translation by line, and how many lines failed (each reported, after ``label``)."""
        lines: list[str] = []
        best: dict[int, str] = {}
        failed = 0
        for r in self.decode(self.decoder_for(weights)):
            if r.error is not None or r.nbest_text is None:
                failed += 1
                self.report(f"{label}: dev line {r.id + 1} did not decode ({r.error}); left out")
                continue
            text = r.nbest_text.splitlines()
            lines.extend(text)
            best[r.id] = text[0].split(" ||| ")[1].strip()
        return lines, best, failed

    def decoded_metric(self, best: dict[int, str]) -> tuple[float, str]:
        """The metric of each decoded line's 1-best (the lines that failed left out), and as
        sacrebleu prints it."""
        if not best:
            return 0.0, "no line decoded"
        total = np.sum([self.metric.stats(i, words) for i, words in best.items()], axis=0)
        return self.metric.score(total), self.metric.describe(total)

    def _stop_reason(self, it: Iteration) -> str | None:
        if it.k >= self.settings.max_iterations:
            return f"the maximum of {self.settings.max_iterations} iterations"
        if it.k > 1 and it.new == 0:
            return "no new n-best entries"
        if it.moved < self.settings.min_change:
            return f"no weight moved by {self.settings.min_change:g} or more"
        return None

    def run(self) -> TuneState:
        """Iterate until a stopping rule holds (replayed iterations count), then decode once more
        with the last optimizer's weights if they moved (so that the weights written are ones the
        run has decoded with)."""
        while self.state.stopped is None:
            it = self.step()
            self.report(f"iteration {it.k}: {self.settings.metric.name.upper()} {it.decoded:.2f} decoded, "
                        f"{it.optimized:.2f} optimized on {it.entries:,} entries (+{it.new:,}), weights moved "
                        f"{it.moved:.4g}, {it.seconds:.1f} s ({it.decode_seconds:.1f} s decoding)"
                        + (f", {it.failed} line(s) left out" if it.failed else ""))
        last = self.state.iterations[-1]
        if last.moved >= self.settings.min_change:
            self._last_decode(last)
        _write_json(os.path.join(self.work, LOG_FILE), {"iterations": [asdict(i) for i in self.state.iterations],
                                                        "last": self.state.last})
        return self.state

    def _last_decode(self, last: Iteration) -> None:
        """Decode the dev set with the last optimizer's weights (kept in the folder for a resume)."""
        path = os.path.join(self.work, LAST_FILE)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                found = json.load(f)
            if tuple(found["weights"]) == last.weights:
                self.state.last = found
                return
        _, best, _ = self._decoded(self.space.weights(np.array(last.weights), self.base), "the last weights")
        decoded, text = self.decoded_metric(best)
        self.state.last = {"weights": list(last.weights), "decoded": decoded, "decoded_text": text}
        _write_json(path, self.state.last)
        self.report(f"the last weights: {self.settings.metric.name.upper()} {decoded:.2f} decoded")

    def final(self) -> Choice:
        """The weights to write: of all the run decoded with (each iteration's, and the last
        optimizer's), those that scored best (the later of equals)."""
        choices = [Choice(it.decoded_with, it.decoded, it.decoded_text, f"iteration {it.k}")
                   for it in self.state.iterations]
        if self.state.last is not None:
            choices.append(Choice(tuple(self.state.last["weights"]), self.state.last["decoded"],
                                  self.state.last["decoded_text"], "the last optimizer's"))
        return max(reversed(choices), key=lambda c: c.decoded)


def _write_text(path: str, text: str) -> None:
    """``path`` holds ``text`` whole or is as it was (written beside it, then renamed)."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _write_json(path: str, value: object) -> None:
    _write_text(path, json.dumps(value, indent=1) + "\n")
