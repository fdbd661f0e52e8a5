"""Comparing schedulers within one workload: the Bobtail IO-scheduler study's colour rule.

The seed (``bobtail-io-scheduler-comparison.txt``, "Results Summary") colours its table of per-scheduler
mean throughputs thus: take the scheduler with the highest mean and the one with the lowest; if their
±1 standard-deviation ranges overlap, colour nothing; if they are distinct, the highest is green and the
lowest red, and "the middle scheduler's mean is color coded based on how it compares to the other two".
The seed had three schedulers; with four (bfq, mq-deadline, none, kyber) every scheduler between the two
is a "middle" one.  Our reading of the middle rule, stated once here: a middle scheduler is green when its
±1σ range overlaps the highest's and not the lowest's, red when it overlaps the lowest's and not the
highest's, and uncoloured when it overlaps both or neither.  Ranges that touch count as overlapping.
The seed does not say which standard deviation; ``ddof`` (default 1, the sample std) is a parameter.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

GREEN, RED, NONE = "green", "red", ""


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def seed_colours(mean: pd.Series, std: pd.Series) -> pd.Series:
    """Colour per scheduler (index) of one workload from its mean and std: ``green``, ``red`` or ``""``."""
    out = pd.Series(NONE, index=mean.index, dtype=object)
    if len(mean) < 2 or mean.isna().any() or std.isna().any():
        return out
    rng = {k: (mean[k] - std[k], mean[k] + std[k]) for k in mean.index}
    hi, lo = mean.idxmax(), mean.idxmin()
    if hi == lo or _overlap(rng[hi], rng[lo]):
        return out
    out[hi], out[lo] = GREEN, RED
    for k in mean.index.drop([hi, lo]):
        oh, ol = _overlap(rng[k], rng[hi]), _overlap(rng[k], rng[lo])
        out[k] = GREEN if oh and not ol else RED if ol and not oh else NONE
    return out


def seed_colour_table(values: pd.DataFrame, by: Sequence[str] = ("scenario", "ddir"),
                      group: str = "io_scheduler", ddof: int = 1) -> pd.DataFrame:
    """Per workload (``by``) and scheduler: ``n``, ``mean``, ``std`` (``ddof``) of ``value`` over the
    repeats and the seed's ``colour``.  A workload where some scheduler has fewer than 2 repeats (no
    std) is left uncoloured."""
    g = values.groupby(list(by) + [group], observed=True, sort=True)["value"]
    t = pd.DataFrame({"n": g.size(), "mean": g.mean(), "std": g.std(ddof=ddof)})
    colour = pd.Series(NONE, index=t.index, dtype=object)
    for _, d in t.groupby(level=list(range(len(by))), sort=True):
        c = seed_colours(d["mean"].droplevel(list(range(len(by)))), d["std"].droplevel(list(range(len(by)))))
        colour.loc[d.index] = c.to_numpy()
    return t.assign(colour=colour)
