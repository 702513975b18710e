"""Side-by-side measurement: the contenders of a benchmark run in rounds, alternating order.

The machines are noisy, so a comparison is only fair when its contenders take turns within one
run: round 1 runs them in order, round 2 in reverse, and so on, each round's figures printed as
they come (JSON) between the load averages before and after.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

Figures = dict[str, Any]


def alternate(
    contenders: list[str], runs: int, measure: Callable[[str], Figures]
) -> dict[str, list[Figures]]:
    """``measure(contender)`` for every contender, ``runs`` rounds, alternating the order;
    contender -> its figures, round by round."""
    print(f"load before: {os.getloadavg()}", flush=True)
    rows: dict[str, list[Figures]] = {name: [] for name in contenders}
    width = max(len(name) for name in contenders)
    for round_number in range(1, runs + 1):
        order = contenders if round_number % 2 else contenders[::-1]
        for name in order:
            figures = measure(name)
            rows[name].append(figures)
            print(f"round {round_number} {name:{width}} {json.dumps(figures)}", flush=True)
    print(f"load after: {os.getloadavg()}")
    return rows
