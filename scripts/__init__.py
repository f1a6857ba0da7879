"""Benchmarks and experiments of fstdecode: run each from the repository root as ``python -m scripts.NAME``.

``scripts.benchlib`` holds what they share (the ``main()`` frame, the record
of a run, timing, the paths of ``../shared/data``, writing a doc section).
"""
