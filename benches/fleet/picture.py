"""One PNG per scenario run (issue 26): per instance slot over time, its core-api breaker
state (a band: closed, half-open, open, forced open, as its log said while it served) and
its calls per second (admitted, refused fast, failed, rate limited), with the scenario's
events marked (outage phases, override set and cleared, freezes) and cold starts / kills."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = (("ok", "#2a9d8f", "admitted"), ("refused", "#e63946", "refused fast"),
         ("failed", "#f4a261", "failed attempt"), ("limited", "#8d99ae", "rate limited"))
STATES = {"closed": "#b7e4c7", "half_open": "#e9c46a", "open": "#e63946", "forced_open": "#7b2cbf"}


def draw(path: Path, title: str, router, events: dict[str, float], seconds: float) -> None:
    slots = sorted({r.slot for r in router.records if r.slot is not None} | set(range(router.size)))
    end = max([seconds] + [r.end for r in router.records])
    fig, axes = plt.subplots(len(slots), 1, sharex=True, figsize=(11, 1.1 + 0.9 * len(slots)), squeeze=False)
    bins: dict[tuple[int, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for r in router.records:
        if r.slot is not None:
            bins[(r.slot, r.kind)][int(r.start)] += 1
    peak = max([1] + [v for d in bins.values() for v in d.values()])
    for ax, slot in zip(axes[:, 0], slots):
        bottom: dict[int, int] = defaultdict(int)
        for kind, colour, label in KINDS:
            d = bins[(slot, kind)]
            xs = sorted(d)
            if xs:
                ax.bar(xs, [d[x] for x in xs], width=1.0, align="edge", color=colour, label=label,
                       bottom=[bottom[x] for x in xs])
                for x in xs:
                    bottom[x] += d[x]
        # The breaker band above the bars.
        band = [(t, s) for (t, sl, _pid, s) in router.transitions if sl == slot]
        prev_t, prev_s = 0.0, "closed"
        for t, s in band + [(end, None)]:
            ax.broken_barh([(prev_t, max(t - prev_t, 0.01))], (peak * 1.08, peak * 0.17),
                           color=STATES.get(prev_s, "#cccccc"))
            prev_t, prev_s = t, s
        frozen_at = None
        for t, sl, _pid, what in router.lifecycle:
            if sl == slot and what == "freeze":
                frozen_at = t
            elif sl == slot and what == "thaw" and frozen_at is not None:
                ax.axvspan(frozen_at, t, color="#a8dadc", alpha=0.5, zorder=0)
                frozen_at = None
        for t, sl, _pid, what in router.lifecycle:
            if sl != slot:
                continue
            marker = {"cold_start": "^", "idle_kill": "x", "freeze": "v", "thaw": "o"}.get(what, ".")
            ax.plot([t], [peak * 1.0], marker=marker, color="black", markersize=6)
        for label, t in events.items():
            ax.axvline(t, color="black", linestyle="--", linewidth=0.8)
        ax.set_ylim(0, peak * 1.3)
        ax.set_xlim(0, end)
        ax.set_ylabel(f"slot {slot}", rotation=0, ha="right", va="center")
        ax.set_yticks([0, peak])
    top = axes[0, 0]
    for label, t in events.items():
        top.text(t, peak * 1.32, label, fontsize=7, rotation=20, ha="left", va="bottom")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, c, _ in KINDS] + \
        [plt.Rectangle((0, 0), 1, 1, color=c) for c in STATES.values()]
    labels = [lab for _, _, lab in KINDS] + [f"breaker {s}" for s in STATES]
    fig.legend(handles, labels, loc="lower center", ncol=8, fontsize=7, frameon=False)
    axes[-1, 0].set_xlabel("seconds (calls per second per instance; ^ cold start, x idle kill, v frozen, o thawed)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    fig.savefig(path, dpi=80)
    plt.close(fig)
