"""Line charts as SVG for the benchmarks' figures in BENCHMARKS.md: a frame, grid lines with
their labels, axis titles, one polyline a curve and a legend; a few kilobytes, no plotting
library.

The caller maps its data to the plot area as fractions (0 at the left or bottom, 1 at the
right or top), so that any scale (linear, logarithmic) is the caller's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Curve", "line_chart"]

WIDTH, HEIGHT = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


@dataclass(frozen=True)
class Curve:
    """One line: its name in the legend, its points (x, y in the caller's units), its colour,
    dashed or not."""

    name: str
    points: Sequence[tuple[float, float]]
    colour: str
    dashed: bool = False


def x_pixel(fraction: float) -> float:
    return LEFT + PLOT_W * fraction


def y_pixel(fraction: float) -> float:
    return TOP + PLOT_H * (1 - fraction)


def line_chart(
    title: str,
    curves: Iterable[Curve],
    x_of: Callable[[float], float],
    y_of: Callable[[float], float],
    x_ticks: Iterable[tuple[float, str]],
    y_ticks: Iterable[tuple[float, str]],
    x_label: str,
    y_label: str,
    marks: Iterable[tuple[float, str]] = (),
) -> str:
    """The chart as SVG text. ``x_of``/``y_of`` map a value to its fraction of the plot area;
    ``x_ticks``/``y_ticks`` are (value, label) of the grid lines; ``marks`` (x value, label)
    are dotted vertical lines (a budget, say)."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
    ]
    for value, label in y_ticks:
        y = y_pixel(y_of(value))
        parts.append(f'<line x1="{LEFT}" y1="{y:.0f}" x2="{WIDTH - RIGHT}" y2="{y:.0f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.0f}" text-anchor="end">{label}</text>')
    for value, label in x_ticks:
        x = x_pixel(x_of(value))
        parts.append(f'<line x1="{x:.0f}" y1="{TOP}" x2="{x:.0f}" y2="{TOP + PLOT_H}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{x:.0f}" y="{TOP + PLOT_H + 18}" text-anchor="middle">'
                     f"{label}</text>")
    for value, label in marks:
        x = x_pixel(x_of(value))
        parts.append(f'<line x1="{x:.0f}" y1="{TOP}" x2="{x:.0f}" y2="{TOP + PLOT_H}" '
                     'stroke="black" stroke-dasharray="2 3"/>')
        parts.append(f'<text x="{x - 4:.0f}" y="{TOP + PLOT_H - 6}" text-anchor="end">{label}'
                     "</text>")
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" fill="none" '
                 'stroke="black"/>')
    parts.append(f'<text x="{LEFT + PLOT_W / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
                 f"{x_label}</text>")
    parts.append(f'<text transform="translate(16 {TOP + PLOT_H / 2}) rotate(-90)" '
                 f'text-anchor="middle">{y_label}</text>')
    for i, curve in enumerate(curves):
        points = " ".join(f"{x_pixel(x_of(x)):.0f},{y_pixel(y_of(y)):.0f}"
                          for x, y in curve.points)
        dash = ' stroke-dasharray="6 4"' if curve.dashed else ""
        parts.append(f'<polyline fill="none" stroke="{curve.colour}" stroke-width="2"{dash} '
                     f'points="{points}"/>')
        y = TOP + 18 + 18 * i
        parts.append(f'<line x1="{WIDTH - RIGHT - 130}" y1="{y - 4}" x2="{WIDTH - RIGHT - 105}" '
                     f'y2="{y - 4}" stroke="{curve.colour}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{WIDTH - RIGHT - 98}" y="{y}">{curve.name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
