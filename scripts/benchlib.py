"""Shared pieces of the benchmark scripts: the machine line and marked sections of a doc."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """CPU model, cores, Python and OS, for the record next to every measurement."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.system()} {platform.release()}"
    )


def write_section(path: Path, name: str, section: str) -> None:
    """Replace the section between ``<!-- name:start -->`` and ``<!-- name:end -->`` of ``path``.

    ``section`` must include both markers; the file is created with a
    ``# Benchmarks`` title if needed, and the section appended if absent.
    """
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    i, j = text.find(start), text.find(end)
    if i != -1 and j != -1 and j > i:
        text = text[:i] + section.rstrip("\n") + text[j + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def code_version(root: Path | None = None, watched: str = "fstdecode") -> str:
    """The git commit measured, and whether ``watched`` had uncommitted changes."""
    import subprocess

    root = root or Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", watched], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"commit {commit}" + (f" with uncommitted changes in {watched}/" if dirty else "")
