"""Checksums of a binarized model (fstdecode/io/binarized.py, native/checksum.h).

``fstdecode binarize`` records each binarized file's CRC-32C and size in DIR/checksums.crc32c;
a process checks a file against it before it trusts the file's values, and ``fstdecode verify
DIR`` checks them on demand. The readers check every offset they follow but not the values
they read: before the checksums, 50 KB of random bytes in the middle of lm.bin decoded (exit 0,
"optimal": true) to another score. The oracle of the CRC is a bitwise CRC-32C written here from
its definition (the reflected Castagnoli polynomial), and the standard check value.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from fstdecode import load_model
from fstdecode._native import core as _core
from fstdecode.io import binarized
from fstdecode.io.binarized import CHECKSUMS_FILE
from fstdecode.model.binarize import BinarizeOptions, binarize

from shared import run_cli
from test_binarize import TINY_INPUT, make_tiny

EXAMPLE_INI = Path("fstdecode/data/moses.ini").resolve()
INPUT = Path("fstdecode/data/input.txt").read_text(encoding="utf-8")
FILES = ("lm.bin", "phrase-table.bin")


def crc32c_bitwise(data: bytes) -> int:
    """CRC-32C from its definition: reflected polynomial 0x82F63B78, init and final xor ~0."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.fixture
def model(tmp_path) -> Path:
    out = tmp_path / "bin"
    binarize(BinarizeOptions(str(EXAMPLE_INI), str(out)))
    return out


def test_the_standard_check_value():
    assert _core.crc32c(b"123456789") == 0xE3069283 == crc32c_bitwise(b"123456789")


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 63, 1000, 4099])
def test_crc_equals_the_bitwise_definition_at_every_alignment(size):
    data = random.Random(size).randbytes(size + 3)
    for start in range(3):  # unaligned starts: the 8-byte loop's head and tail
        chunk = data[start:start + size]
        assert _core.crc32c(chunk) == crc32c_bitwise(chunk)
        # Continued over two pieces, it is the CRC of the whole.
        cut = size // 3
        assert _core.crc32c(chunk[cut:], _core.crc32c(chunk[:cut])) == crc32c_bitwise(chunk)


# native/checksum.cpp's kLane: past 3 lanes the crc32-instruction kernel runs three chains at once
# and joins them by a table of the state's shift over a lane of zeros. Lengths near multiples of
# 3 lanes are tried for this lane size and its neighbours, so a change of kLane stays covered.
LANES = (2048, 4096, 8192)


def crc32c_bytewise(data: bytes, crc: int = 0) -> int:
    """The bitwise definition one byte at a time (a table of its 256 steps), to check 100 KB."""
    table = _BYTE_STEPS
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _byte_step(b: int) -> int:
    for _ in range(8):
        b = (b >> 1) ^ (0x82F63B78 if b & 1 else 0)
    return b


_BYTE_STEPS = [_byte_step(b) for b in range(256)]


def test_the_bytewise_oracle_is_the_bitwise_one():
    data = random.Random(5).randbytes(300)
    assert crc32c_bytewise(b"123456789") == 0xE3069283
    assert all(crc32c_bytewise(data[:n]) == crc32c_bitwise(data[:n]) for n in range(0, 300, 7))


@pytest.mark.parametrize("size", sorted({0, 1, 7, 8, *(n for lane in LANES for n in (
    3 * lane - 1, 3 * lane, 3 * lane + 1, 6 * lane + 8, 10 * lane + 5))}))
def test_crc_over_three_lanes_equals_the_definition(size):
    rng = random.Random(size)
    data = rng.randbytes(size + 1)
    for chunk in (data[:size], data[1:]):  # aligned and unaligned starts
        assert _core.crc32c(chunk) == crc32c_bytewise(chunk)
    # Continued from a state other than the initial one, which the first lane carries.
    start = rng.randrange(1 << 32)
    assert _core.crc32c(data[:size], start) == crc32c_bytewise(data[:size], start)


def test_crc_of_megabytes_equals_the_definition_and_the_crc_of_short_pieces():
    # Pieces shorter than 3 lanes take the one-chain loop only, which the tests above check.
    rng = random.Random(11)
    data = rng.randbytes(3 * (1 << 20) + 12345)
    crc, at = 0, 0
    while at < len(data):
        step = rng.randrange(1, 3 * min(LANES))
        crc = _core.crc32c(data[at:at + step], crc)
        at += step
    assert _core.crc32c(data) == crc == crc32c_bytewise(data)
    assert _core.crc32c(data[3:], 0x12345678) == crc32c_bytewise(data[3:], 0x12345678)


def test_file_crc_reads_the_whole_file(tmp_path):
    path = tmp_path / "f"
    data = random.Random(1).randbytes(3 * (1 << 20) + 5)  # more than the reader's 1 MiB buffer
    path.write_bytes(data)
    assert _core.file_crc32c(str(path)) == (_core.crc32c(data), len(data))
    assert _core.crc32c(data[:1000]) == crc32c_bitwise(data[:1000])
    with pytest.raises(OSError, match="not a regular file"):
        _core.file_crc32c(str(tmp_path))


def test_binarize_records_every_binarized_file(model):
    lines = (model / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()
    names = sorted(line.split(" ", 3)[3] for line in lines)
    assert names == sorted(FILES)  # not the moses.ini, whose weights a user may edit
    for line in lines:
        kind, crc, size, name = line.split(" ", 3)
        data = (model / name).read_bytes()
        assert kind == "crc32c" and int(crc, 16) == crc32c_bitwise(data) and int(size) == len(data)


def test_verify_lists_each_file(model):
    proc = run_cli(["verify", str(model)], "")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == sorted(
        f"{model / name}: OK (CRC-32C {crc32c_bitwise((model / name).read_bytes()):08x}, "
        f"{(model / name).stat().st_size:,} bytes)" for name in FILES)


def damaged(model: Path, name: str, seed: int, size: int) -> Path:
    """``model`` with ``size`` random bytes written into the middle of ``name`` (length kept)."""
    path = model / name
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    at = rng.randrange(len(data) // 4, len(data) // 2)
    new = rng.randbytes(min(size, len(data) - at))
    if bytes(data[at:at + len(new)]) == new:
        new = bytes(b ^ 0xFF for b in new)
    data[at:at + len(new)] = new
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("seed", range(4))
def test_a_damaged_file_is_refused_by_decode_and_verify(model, name, seed):
    path = damaged(model, name, seed, size=3)
    for args in (["decode", "-f", str(model / "moses.ini")], ["verify", str(model)]):
        proc = run_cli(args, INPUT)
        assert proc.returncode == 2 and proc.stdout == ""
        err = proc.stderr.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in proc.stderr
        assert err[0].startswith(f"fstdecode: error: {path}: its CRC-32C is ")
        assert "run fstdecode binarize again" in err[0]


@pytest.mark.parametrize("size", [1, 3000])
def test_a_damaged_reordering_table_is_refused(tmp_path, size):
    out = tmp_path / "bin"
    binarize(BinarizeOptions(str(make_tiny(tmp_path / "text")), str(out)))
    path = damaged(out, "reordering-table.bin", 7, size)
    proc = run_cli(["decode", "-f", str(out / "moses.ini")], "\n".join(TINY_INPUT) + "\n")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"fstdecode: error: {path}: its CRC-32C is ")


def test_a_file_used_by_itself_is_checked_too(model):
    damaged(model, "lm.bin", 0, size=50)
    proc = run_cli(["decode", "-f", str(EXAMPLE_INI), "--lm", str(model / "lm.bin")], INPUT)
    assert proc.returncode == 2 and f"{model / 'lm.bin'}: its CRC-32C" in proc.stderr


def test_a_file_of_another_size_is_named_so(model):
    path = model / "phrase-table.bin"
    path.write_bytes(path.read_bytes() + b"\0" * 8)
    proc = run_cli(["verify", str(model)], "")
    assert proc.returncode == 2 and f"{path}: {path.stat().st_size:,} bytes where binarize wrote" in proc.stderr


def test_a_model_without_checksums_is_refused(model):
    (model / CHECKSUMS_FILE).unlink()
    tail = ("cannot be checked (a model binarized by an older fstdecode, or a binarized file moved out of its "
            "folder); run fstdecode binarize again")
    for args, what in ((["decode", "-f", str(model / "moses.ini")], "no checksums.crc32c beside it, so it"),
                       (["verify", str(model)], "no checksums.crc32c, so its files")):
        proc = run_cli(args, INPUT)
        assert proc.returncode == 2 and proc.stdout == ""
        named = str(model) if args[0] == "verify" else proc.stderr.split(": ")[2]
        assert named in {str(model), *(str(model / name) for name in FILES)}
        assert proc.stderr.strip() == f"fstdecode: error: {named}: {what} {tail}"


def test_a_file_missing_from_the_list_or_a_bad_line_is_refused(model):
    listed = (model / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()
    (model / CHECKSUMS_FILE).write_text("\n".join(l for l in listed if not l.endswith(" lm.bin")) + "\n")
    proc = run_cli(["decode", "-f", str(model / "moses.ini")], INPUT)
    assert proc.returncode == 2 and f"{model / 'lm.bin'}: {model / CHECKSUMS_FILE} has no checksum for it" in proc.stderr
    proc = run_cli(["verify", str(model)], "")
    assert proc.returncode == 2 and "a binarized file that checksums.crc32c does not list" in proc.stderr
    (model / CHECKSUMS_FILE).write_text("\n".join(listed[:1] + ["crc32c zz 1 lm.bin"]) + "\n")
    proc = run_cli(["verify", str(model)], "")
    assert proc.returncode == 2 and f"{model / CHECKSUMS_FILE}:2: not a line 'crc32c HEX SIZE NAME'" in proc.stderr


def test_verify_of_a_missing_file_or_not_a_folder(model, tmp_path):
    (model / "lm.bin").unlink()
    proc = run_cli(["verify", str(model)], "")
    assert proc.returncode == 2 and f"{model / 'lm.bin'}: missing" in proc.stderr
    proc = run_cli(["verify", str(tmp_path / "nothing")], "")
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_each_file_is_checked_once_per_process(model, monkeypatch):
    calls = []
    real = _core.file_crc32c

    def counted(path):
        calls.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(binarized._core, "file_crc32c", counted)
    monkeypatch.setattr(binarized, "_VERIFIED", set())
    load_model(model / "moses.ini")
    load_model(model / "moses.ini")
    assert sorted(calls) == sorted(FILES)
    # A file replaced (another inode, size or time) is checked again.
    shutil.copy(model / "lm.bin", model / "lm.tmp")
    os.replace(model / "lm.tmp", model / "lm.bin")
    load_model(model / "moses.ini")
    assert sorted(calls) == sorted([*FILES, "lm.bin"])
