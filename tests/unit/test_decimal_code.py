"""The decimal codes of native/decimal_code.h (``_core.decimal_encode`` / ``decimal_decode``),
the score codec of binarized tables, against Python's own float parsing as the oracle:

* a decimal written with k <= 22 digits after the point and fewer than 16 significant digits,
  parsed by ``float()``, round-trips bit for bit, and in a few bytes (never the 9-byte escape);
* every other double (17 significant digits, subnormals, huge, negative zero, infinities, NaN)
  round-trips bit for bit too, whatever form it takes;
* the column's usual exponent and sign give the short form: a 6-digit probability (or its
  negative, in a negative column) in at most 3 bytes;
* a truncated code, a varint longer than 64 bits and a code with k > 22 or m >= 2^53 are refused.
"""

from __future__ import annotations

import math
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode._native import core as _core
from shared import examples


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def varint(v: int) -> bytes:
    """LEB128, written here independently of the core."""
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def round_trip(values: list[float], exponent: int, negative: bool = False) -> list[float]:
    return _core.decimal_decode(_core.decimal_encode(values, exponent, negative), exponent, negative)


def assert_round_trip(values: list[float], exponent: int, negative: bool = False) -> None:
    back = round_trip(values, exponent, negative)
    assert [bits(x) for x in back] == [bits(x) for x in values]


def decimal_text(rng: random.Random, digits: int, k: int, sign: str = "") -> str:
    """A decimal of ``digits`` significant digits with ``k`` digits after the point."""
    m = rng.randrange(10 ** (digits - 1), 10**digits) if digits > 0 else 0
    text = str(m).rjust(k + 1, "0")
    return sign + (text[: len(text) - k] + "." + text[len(text) - k:] if k else text)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("exponent", [0, 3, 6, 22])
def test_decimals_of_every_length_and_exponent_round_trip_in_few_bytes(exponent, negative):
    rng = random.Random(exponent)
    for digits in range(1, 16):  # m < 10^15 < 2^53
        for k in range(0, 23):
            for sign in ("", "-"):
                texts = [decimal_text(rng, digits, k, sign) for _ in range(20)]
                values = [float(t) for t in texts]
                assert_round_trip(values, exponent, negative)
                for text, value in zip(texts, values):
                    code = _core.decimal_encode([value], exponent, negative)
                    # Never the escape (1 byte + 8 raw): at most a 10-byte varint, mostly far less.
                    assert code[0] != 0x01 or len(code) < 9, text
                    assert len(code) <= 10, text


def test_a_column_of_six_digit_probabilities_takes_at_most_three_bytes_a_score():
    rng = random.Random(6)
    values = [float(decimal_text(rng, rng.randint(1, 6), 6)) for _ in range(2000)] + [1.0, 0.0]
    assert len(_core.decimal_encode(values, 6)) <= 3 * len(values)
    assert_round_trip(values, 6)
    # The same numbers with a column exponent of 0 still round-trip (the general form), in more bytes.
    assert len(_core.decimal_encode(values, 0)) > len(_core.decimal_encode(values, 6))
    assert_round_trip(values, 0)
    # Their negatives (logs written as text) take as few bytes in a column of negative numbers.
    negatives = [-x for x in values]
    assert len(_core.decimal_encode(negatives, 6, negative=True)) == len(_core.decimal_encode(values, 6))
    assert len(_core.decimal_encode(negatives, 6)) > len(_core.decimal_encode(values, 6))
    assert_round_trip(negatives, 6, negative=True)
    assert_round_trip(negatives + values, 6, negative=True)


ODD = [
    -0.0, 0.0, math.inf, -math.inf, math.nan, -math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
    1.7976931348623157e308, -1.7976931348623157e308, 0.1 + 0.2, 1 / 3, math.pi, 2.0**53, 2.0**53 + 2, 1e22, 1e23,
    1e-22, 1e-23, 123456789012345678.0, 9007199254740993.0, -1e300, math.log(0.019183), -100.0,
]


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("exponent", [0, 6, 22])
def test_other_doubles_round_trip_bit_for_bit(exponent, negative):
    assert_round_trip(ODD, exponent, negative)
    nan = round_trip([math.nan], exponent, negative)[0]
    assert math.isnan(nan) and bits(nan) == bits(math.nan)


def test_seventeen_digit_doubles_take_the_escape():
    # repr of 1/3 has 16 significant digits and no shorter decimal: m >= 2^53 at every k <= 22.
    code = _core.decimal_encode([0.1 + 0.2], 0)
    assert code[:1] == b"\x01" and len(code) == 9 and code[1:] == bits(0.1 + 0.2)


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), st.integers(0, 22), st.booleans())
def test_any_double_round_trips(x, exponent, negative):
    assert_round_trip([x, x, -x], exponent, negative)


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 2**53 - 1), st.integers(0, 22), st.integers(0, 22))
def test_any_decimal_under_clingers_bound_is_no_escape(m, k, exponent):
    value = float(f"{m}e-{k}")  # Python's correctly rounded parse, the oracle
    code = _core.decimal_encode([value], exponent)
    assert code[:1] != b"\x01" or len(code) != 9
    assert [bits(x) for x in _core.decimal_decode(code, exponent)] == [bits(value)]


@pytest.mark.parametrize(
    "data, why",
    [
        (b"\x80", "a varint cut short"),
        (b"\x80\x80", "a varint cut short"),
        (b"\x01\x00\x00\x00", "the escape's 8 bytes cut short"),
        (b"\xff" * 10 + b"\x01", "a varint longer than 10 bytes"),
        (b"\xff" * 9 + b"\x02", "a varint beyond 64 bits"),
        (varint(((0 << 6 | 23 << 1) + 1) << 1 | 1), "k = 23"),
        (varint(((0 << 6 | 31 << 1) + 1) << 1 | 1), "k = 31"),
        (varint(((2**53) << 6) + 1 << 1 | 1), "m = 2^53 in the general form"),
        (varint(2**53 << 1), "m = 2^53 in the column's form"),
    ],
)
def test_invalid_codes_are_refused(data, why):
    with pytest.raises(ValueError, match="cut short or invalid"):
        _core.decimal_decode(data, 6)
    # ... also after a valid code, with the position named.
    with pytest.raises(ValueError, match="at byte 1$"):
        _core.decimal_decode(b"\x02" + data, 6)


def test_the_format_is_as_documented():
    # 0.019183 at the column exponent 6: v = m << 1 = 38366; -0.019183 the same in a negative column.
    assert _core.decimal_encode([0.019183], 6) == varint(19183 << 1)
    assert _core.decimal_encode([-0.019183], 6, negative=True) == varint(19183 << 1)
    assert _core.decimal_decode(varint(19183 << 1), 6, negative=True) == [-0.019183]
    # At exponent 0, the general form with the shortest k: w = (m << 6 | k << 1 | sign) + 1.
    assert _core.decimal_encode([-0.019183], 0) == varint(((19183 << 6 | 6 << 1 | 1) + 1) << 1 | 1)
    assert _core.decimal_decode(varint(((25 << 6 | 1 << 1 | 0) + 1) << 1 | 1), 0) == [2.5]
    assert _core.decimal_decode(b"\x01" + bits(math.pi), 9) == [math.pi]
    with pytest.raises(ValueError, match="exponent"):
        _core.decimal_encode([1.0], 23)
