"""How the report's sections write a figure in a cell ("n/a" where the table has none), and the few reads of a
column that a cell is built from. One home: every section imports these, none keeps a copy."""

from __future__ import annotations

import math

import pandas as pd

from app.report import repeats


def rate(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.0f}"


def money(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"${v:,.0f}"


def ms(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v / 1000:,.2f} s" if v >= 1000 else f"{v:,.1f} ms"


def count(v: object) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{int(v):,}"


def secs(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.1f} s"


def pct(v: float) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{v * 100:,.0f}%"


def num(v: float, digits: int) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{v:,.{digits}f}"


def dip(ratio: float) -> str:
    """The adverse table's worst dip: the lowest 5 s mean after a fault over the pre-fault rate. At or above
    the pre-fault rate (a catch-up burst, or a fault that never dented throughput) there was no dip."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    return "no dip" if ratio >= 1.0 else f"{ratio:.0%} of pre-fault rate"


def interval(row: pd.Series, metric: str, pattern: str, with_ci: bool) -> str:
    """A phase_interval_view row's figure with its interval over repeats (the figure alone without repeats)."""
    n = int(row.get("n", 1)) if with_ci else 1
    return repeats.format_interval(row.get(metric, math.nan), row.get(f"{metric}_low", math.nan),
                                   row.get(f"{metric}_high", math.nan), n, pattern)


def all_true(values: pd.Series) -> bool | None:
    """True when every known value is true; None when none is known."""
    known = values.dropna()
    return None if known.empty else bool(known.astype(bool).all())


def any_true(values: pd.Series) -> bool | None:
    """True when some known value is true; None when none is known."""
    known = values.dropna()
    return None if known.empty else bool(known.astype(bool).any())


def of_repeat(df: pd.DataFrame | None, repeat: int) -> pd.DataFrame | None:
    """A raw series' rows of one repeat (None stays None: the table had nothing for the run)."""
    return None if df is None else df[df["repeat"] == repeat]
