"""`percentile`: the one quantile rule of every benchmark and test figure (issue 42).

The rule is the standard library's `statistics.quantiles(..., method="inclusive")`: linear
interpolation between the two nearest ranks, the sample's minimum at q = 0 and its maximum at
q = 1 (numpy's default `linear` method, "type 7" of Hyndman and Fan 1996). Earlier copies
took a nearest rank, some rounding it up and some to the nearest, so a figure measured before
2026-12-05 can differ from one measured since by up to one gap between neighbouring samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from fractions import Fraction

# Finest quantile step: q is taken to 1/10 000 (p99.99).
_STEPS = 10_000


def percentile(values: Iterable[float], q: float) -> float:
    """The q-quantile of `values` (q in [0, 1]; 0.99 for p99), in their unit; 0.0 for none.

    Raises ValueError when q is outside [0, 1].
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
    data = sorted(values)
    if not data:
        return 0.0
    if len(data) == 1 or q == 0.0:
        return float(data[0])
    if q == 1.0:
        return float(data[-1])
    step = Fraction(q).limit_denominator(_STEPS)
    cuts = statistics.quantiles(data, n=step.denominator, method="inclusive")
    return float(cuts[step.numerator - 1])
