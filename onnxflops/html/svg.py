"""Small self-contained SVG charts for the HTML report: scatter plots on log axes (with lines, for
the roofline) and paired horizontal bars. Each element carries a <title> the browser shows on hover.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

WIDTH, HEIGHT = 600, 380
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78, 24, 30, 52
FONT_SIZE = 11  # of labels and ticks
# Advance widths in em, at or above DejaVu Sans's (the widest common sans-serif; Arial and
# Helvetica are narrower): a label sized by them is never wider than estimated.
_NARROW, _WIDE = frozenset("fijlrtI.,:;'|!()[]/ -"), frozenset("mwMW%@…+=×")
NARROW_EM, WIDE_EM, UPPER_EM, OTHER_EM = 0.42, 1.0, 0.8, 0.64
# The bar chart's labels take at most this much of its width; a longer one is cut, whole in its
# tooltip.
MOST_LABEL_WIDTH = WIDTH // 2


@dataclass
class Point:
    x: float
    y: float
    color: str
    title: str
    label: str = ""  # drawn beside the point


@dataclass
class Line:
    points: list[tuple[float, float]]
    color: str
    title: str
    dashed: bool = False


@dataclass
class _LogAxis:
    low: float  # log10 of the first decade shown
    high: float
    start: float  # pixel of `low`
    end: float

    @classmethod
    def fit(cls, values: Sequence[float], start: float, end: float) -> "_LogAxis":
        logs = [math.log10(v) for v in values if v > 0] or [0.0, 1.0]
        # A point close to a decade line gets the next decade too, so it is not on the frame.
        low, high = math.floor(min(logs) - 0.15), math.ceil(max(logs) + 0.15)
        return cls(low, high if high > low else low + 1, start, end)

    def __call__(self, value: float) -> float:
        t = (math.log10(value) - self.low) / (self.high - self.low)
        return self.start + t * (self.end - self.start)

    def decades(self) -> range:
        return range(int(self.low), int(self.high) + 1)


def scatter(points: Sequence[Point], x_label: str, y_label: str, *, lines: Sequence[Line] = (),
            kind: str, legend: Sequence[tuple[str, str]] = ()) -> str:
    """A log-log scatter plot; points at or below zero cannot be placed and are left out."""
    shown = [p for p in points if p.x > 0 and p.y > 0]
    xs = [p.x for p in shown] + [x for line in lines for x, _ in line.points]
    ys = [p.y for p in shown] + [y for line in lines for _, y in line.points]
    x_axis = _LogAxis.fit(xs, MARGIN_LEFT, WIDTH - MARGIN_RIGHT)
    y_axis = _LogAxis.fit(ys, HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    body = [_log_grid(x_axis, y_axis), _axis_labels(x_label, y_label)]
    for line in lines:
        path = " ".join(f"{x_axis(x):.1f},{y_axis(y):.1f}" for x, y in line.points
                        if x > 0 and y > 0)
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        body.append(f'<polyline points="{path}" fill="none" stroke="{line.color}" '
                    f'stroke-width="2"{dash}><title>{escape(line.title)}</title></polyline>')
    for p in shown:
        cx, cy = x_axis(p.x), y_axis(p.y)
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{p.color}" '
                    f'fill-opacity="0.8" stroke="#333" stroke-width="0.5">'
                    f'<title>{escape(p.title)}</title></circle>')
        if p.label:  # on the side with room for it
            right = cx < (MARGIN_LEFT + WIDTH) / 2
            room = WIDTH - cx - 10 if right else cx - 10
            body.append(f'<text x="{cx + (8 if right else -8):.1f}" y="{cy + 4:.1f}" '
                        f'font-size="{FONT_SIZE}" text-anchor="{"start" if right else "end"}">'
                        f'{fitted(p.label, room)}</text>')
    body.append(_legend(legend))
    return _svg(kind, body)


def paired_bars(categories: Sequence[str], first: tuple[str, Sequence[float], str],
                second: tuple[str, Sequence[float], str], *, kind: str, x_label: str) -> str:
    """Two bars per category (e.g. share of latency beside share of FLOPs), values in 0..1."""
    left = 12 + min(max((text_width(name) for name in categories), default=0),
                    MOST_LABEL_WIDTH)
    row = 26
    height = MARGIN_TOP + row * max(1, len(categories)) + MARGIN_BOTTOM
    span = WIDTH - left - MARGIN_RIGHT
    body = []
    for k in range(0, 11, 2):
        x = left + span * k / 10
        body.append(f'<line x1="{x:.1f}" y1="{MARGIN_TOP}" x2="{x:.1f}" '
                    f'y2="{height - MARGIN_BOTTOM}" stroke="#ddd"/>'
                    f'<text x="{x:.1f}" y="{height - MARGIN_BOTTOM + 16}" font-size="{FONT_SIZE}" '
                    f'text-anchor="middle">{10 * k}%</text>')
    for i, name in enumerate(categories):
        y = MARGIN_TOP + i * row
        body.append(f'<text x="{left - 6:.1f}" y="{y + 16}" font-size="{FONT_SIZE}" '
                    f'text-anchor="end">{fitted(name, left - 8, always_titled=True)}</text>')
        for offset, (label, values, color) in ((3, first), (13, second)):
            w = span * max(0.0, min(1.0, values[i]))
            body.append(f'<rect x="{left:.1f}" y="{y + offset}" width="{w:.1f}" height="9" '
                        f'fill="{color}"><title>{escape(name)}: {100 * values[i]:.1f}% of '
                        f'{escape(label)}</title></rect>')
    body.append(f'<text x="{left + span / 2:.1f}" y="{height - 12}" font-size="12" '
                f'text-anchor="middle">{escape(x_label)}</text>')
    body.append(_legend([(first[0], first[2]), (second[0], second[2])]))
    return _svg(kind, body, height)


def _log_grid(x: _LogAxis, y: _LogAxis) -> str:
    """The frame, a grid line and a label at each decade of both axes."""
    left, right, top, bottom = MARGIN_LEFT, WIDTH - MARGIN_RIGHT, MARGIN_TOP, HEIGHT - MARGIN_BOTTOM
    parts = [f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
             f'fill="none" stroke="#999"/>']
    ticks = [(x(10.0 ** d), None, d) for d in x.decades()] + \
            [(None, y(10.0 ** d), d) for d in y.decades()]
    for px, py, d in ticks:
        x1, y1, x2, y2 = (px, top, px, bottom) if py is None else (left, py, right, py)
        tx, ty, anchor = (px, bottom + 16, "middle") if py is None else (left - 6, py + 4, "end")
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                     f'stroke="#e5e5e5"/><text x="{tx:.1f}" y="{ty:.1f}" font-size="{FONT_SIZE}" '
                     f'text-anchor="{anchor}">{_power(d)}</text>')
    return "".join(parts)


def _axis_labels(x_label: str, y_label: str) -> str:
    cx = (MARGIN_LEFT + WIDTH - MARGIN_RIGHT) / 2
    cy = (MARGIN_TOP + HEIGHT - MARGIN_BOTTOM) / 2
    return (f'<text x="{cx:.1f}" y="{HEIGHT - 12}" font-size="12" text-anchor="middle">'
            f'{escape(x_label)}</text>'
            f'<text x="18" y="{cy:.1f}" font-size="12" text-anchor="middle" '
            f'transform="rotate(-90 18 {cy:.1f})">{escape(y_label)}</text>')


def _legend(entries: Sequence[tuple[str, str]]) -> str:
    parts, x = [], MARGIN_LEFT
    for label, color in entries:
        parts.append(f'<rect x="{x}" y="8" width="10" height="10" fill="{color}"/>'
                     f'<text x="{x + 14}" y="17" font-size="{FONT_SIZE}">'
                     f'{fitted(label, WIDTH - x - 16)}</text>')
        x += 24 + math.ceil(text_width(label))
    return "".join(parts)


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """width ≤ size · Σ advance(char): pixels `text` takes at most, by the em widths above."""
    return size * sum(NARROW_EM if c in _NARROW else WIDE_EM if c in _WIDE
                      else UPPER_EM if c.isupper() else OTHER_EM for c in text)


def fitted(text: str, room: float, always_titled: bool = False) -> str:
    """`text` as SVG text content within `room` pixels: cut with an ellipsis where longer, the
    whole of it then in a tooltip (with `always_titled`, in one either way)."""
    shown = text
    while shown and text_width(shown + ("…" if shown != text else "")) > room:
        shown = shown[:-1]
    cut = shown != text
    label = escape(shown + ("…" if cut else ""))
    return f"{label}<title>{escape(text)}</title>" if cut or always_titled else label


def _power(decade: int) -> str:
    """10^d as a reader writes it: 0.001 to 1000 plainly, beyond with SI prefixes (10K, 1G)."""
    if -3 <= decade <= 3:
        return f"{10.0 ** decade:g}"
    prefixes = {-12: "p", -9: "n", -6: "µ", -3: "m", 3: "K", 6: "M", 9: "G", 12: "T", 15: "P"}
    base = decade - decade % 3
    return f"{10 ** (decade - base)}{prefixes[base]}" if base in prefixes else f"1e{decade}"


def _svg(kind: str, body: list[str], height: int = HEIGHT) -> str:
    return (f'<svg class="plot" data-plot="{kind}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
            f'font-family="sans-serif">{"".join(body)}</svg>')
