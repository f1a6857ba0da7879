"""Command-line flags generated from the search methods' options dataclasses.

As sacrebleu builds each metric's flags from the metric's own arguments,
every field of every registered options class (``fstdecode.search.base``)
becomes one flag, with the help, range and defaults its ``metadata``
declares. A field that several methods share (``--beam-size``) is one flag.
No list of option names is kept by hand anywhere else.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from fstdecode.errors import FstdecodeError
from fstdecode.search.base import METHODS, OptionsError, SearchOptions, flag_of

_TYPES = {"int": int, "float": float, "str": str}


def _cli_fields() -> dict[str, tuple[dataclasses.Field, list[str]]]:
    """Field name -> (its field, the methods that take it), in registration order."""
    out: dict[str, tuple[dataclasses.Field, list[str]]] = {}
    for method in METHODS.values():
        for f in dataclasses.fields(method.options):
            if f.metadata.get("cli", True):
                out.setdefault(f.name, (f, []))[1].append(method.name)
    return out


def _defaults(name: str, methods: list[str]) -> str:
    """``default X``, or each method's default where they differ."""
    values = {m: next(f.default for f in dataclasses.fields(METHODS[m].options) if f.name == name) for m in methods}

    def show(v: Any) -> str:
        return "off" if v is None or v is False else "on" if v is True else f"{v:,}" if isinstance(v, int) else str(v)

    if len(set(map(repr, values.values()))) == 1:
        return f"default: {show(next(iter(values.values())))}"
    return "default: " + ", ".join(f"{m} {show(v)}" for m, v in values.items())


def add_search_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per options field; its dest is the field name and its default None (= not given)."""
    groups: dict[tuple[str, ...], Any] = {}
    every = tuple(METHODS)
    for name, (f, methods) in _cli_fields().items():
        key = tuple(methods)
        if key not in groups:
            title = "search (every method)" if key == every else "search (--method " + " | ".join(key) + ")"
            groups[key] = parser.add_argument_group(title)
        help = f.metadata["help"]
        if "default" not in help:
            help += f" ({_defaults(name, methods)})"
        kind = str(f.type).replace(" | None", "")
        kwargs: dict[str, Any] = {"dest": name, "default": None, "help": help}
        if kind == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _TYPES[kind]
            kwargs["metavar"] = f.metadata.get("metavar") or {"int": "N", "float": "W", "str": "FILE"}[kind]
            if f.metadata.get("choices"):
                kwargs["choices"] = f.metadata["choices"]
                del kwargs["metavar"]
        groups[key].add_argument(flag_of(f), **kwargs)


def search_options(method: str, args: argparse.Namespace, **defaults: Any) -> SearchOptions:
    """The options of ``method`` from the flags given; ``defaults`` fill fields not given.

    Raises OptionsError for a flag the method does not take (naming the
    methods that do) or a value out of range.
    """
    cls = METHODS[method].options
    own = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {k: v for k, v in defaults.items() if k in own}
    for name, (f, methods) in _cli_fields().items():
        value = getattr(args, name, None)
        if value is None:
            continue
        if name not in own:
            raise OptionsError(f"{flag_of(f)} needs --method {' or '.join(methods)}, not {method}")
        values[name] = value
    return cls(**values)


def check_min(flag: str, value: int | None, minimum: int) -> None:
    """Refuse an out-of-range numeric flag up front (rather than ignore or misread it)."""
    if value is not None and value < minimum:
        raise FstdecodeError(f"{flag} must be >= {minimum}, got {value}")
