"""Tuning a model's weights on a dev set (``fstdecode tune``): the model loaded once, each
iteration's n-best lists kept in memory and merged, optimized by MERT or batch k-best MIRA
against sacrebleu's BLEU (or chrF).

Modules: :mod:`~fstdecode.tune.metric` (sacrebleu's statistics), :mod:`~fstdecode.tune.space`
(the tuned weight components), :mod:`~fstdecode.tune.pool` (the merged lists),
:mod:`~fstdecode.tune.mert` and :mod:`~fstdecode.tune.mira` (the optimizers),
:mod:`~fstdecode.tune.loop` (the iterations, the working folder) and
:mod:`~fstdecode.tune.ini` (the tuned moses.ini).
"""
