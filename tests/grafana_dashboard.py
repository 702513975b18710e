"""The Grafana dashboard (``conf/grafana/pyflink-crawler.json``) as the tests read it: its
panels, their PromQL queries, and the series selectors of each query.

A selector is what a query reads: its label matchers, the metric's name among them (as
``__name__``: an exact name, or a family of names as a regular expression). The unit test holds
the names against the figures the stages count; the end-to-end test holds the selectors against
the scrape of a running crawl. The PromQL reader below knows what the dashboard's queries use
(selectors, functions, aggregations with ``by``/``without``, ranges and subqueries, strings,
numbers, Grafana's ``$variables``) and fails on anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "conf" / "grafana" / "pyflink-crawler.json"

#: The Prometheus name of a crawler figure: ``<this><stage>_<metric_name(figure)>``.
CRAWLER_PREFIX = "flink_taskmanager_job_task_operator_crawler_"

#: Variables Grafana defines itself that the queries use.
GRAFANA_VARIABLES = frozenset({"__rate_interval", "__interval"})

#: PromQL words that are neither metrics nor functions.
_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                       "and", "or", "unless", "offset"})
#: Keywords followed by a parenthesised list of label names.
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<number>(?:\d+(?:ms|[smhdwy]))+|\d+(?:\.\d+)?(?:e[+-]?\d+)?)
    | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
    | (?P<variable>\$[A-Za-z_][A-Za-z0-9_]*)
    | (?P<punct>=~|!~|!=|==|>=|<=|[-+*/%^(){}\[\],=<>:])
    )""",
    re.VERBOSE,
)
_MATCHER_OPS = frozenset({"=", "!=", "=~", "!~"})
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<selector>.+),\s*)?(?P<label>\w+)\s*\)\s*$")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Matcher:
    """One label matcher of a selector (``label op "value"``)."""

    label: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a series with ``labels`` (``__name__`` included) passes; regular
        expressions are anchored, and a missing label is the empty string, as in Prometheus."""
        actual = labels.get(self.label, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        found = re.fullmatch(self.value, actual) is not None
        return found if self.op == "=~" else not found


@dataclass(frozen=True)
class Selector:
    """The series one selector of a query reads."""

    matchers: tuple[Matcher, ...]

    @property
    def name(self) -> str | None:
        """The exact metric name, if the selector names one."""
        return next((m.value for m in self.matchers if m.label == "__name__" and m.op == "="),
                    None)

    @property
    def family(self) -> str | None:
        """The regular expression of metric names, if the selector reads a family."""
        return next((m.value for m in self.matchers if m.label == "__name__" and m.op == "=~"),
                    None)

    def __str__(self) -> str:
        return "{" + ", ".join(f'{m.label}{m.op}"{m.value}"' for m in self.matchers) + "}"

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(matcher.matches(labels) for matcher in self.matchers)

    def with_variables(self, values: Mapping[str, str]) -> Selector:
        """This selector with Grafana's ``$variables`` in its values replaced."""
        def replace(text: str) -> str:
            return _VARIABLE.sub(lambda match: values[match.group(1)], text)
        return Selector(tuple(Matcher(m.label, m.op, replace(m.value)) for m in self.matchers))


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel but rows (the panels of collapsed rows too)."""
    for panel in dashboard["panels"]:
        if panel.get("type") == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def panel_queries(dashboard: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL expression) of every query of every panel."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield panel.get("title", ""), target.get("expr", "")


def variable_queries(dashboard: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(variable name, the selector it reads, the label it lists) of each variable that lists
    a label's values (``label_values(selector, label)``)."""
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query)
        match = _LABEL_VALUES.match(text)
        if match is None:
            raise ValueError(f"variable {variable.get('name')}: not a label_values query: {text}")
        yield variable["name"], match.group("selector") or "", match.group("label")


def variables_used(expression: str) -> set[str]:
    """The names of the ``$variables`` in ``expression``."""
    return set(_VARIABLE.findall(expression))


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    expression = expression.rstrip()
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read PromQL at {expression[position:position + 30]!r} "
                             f"in {expression!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def _unquote(string: str) -> str:
    return re.sub(r"\\(.)", r"\1", string[1:-1])


def selectors(expression: str) -> list[Selector]:
    """The series selectors of a PromQL ``expression``, in order."""
    tokens = _tokens(expression)
    found, index = [], 0

    def matchers_from(start: int) -> tuple[list[Matcher], int]:
        """The matchers of the ``{...}`` opening at ``start``; the index after it."""
        matchers, i = [], start + 1
        while tokens[i] != ("punct", "}"):
            (label_kind, label), (_, op), (value_kind, value) = tokens[i:i + 3]
            if label_kind != "name" or op not in _MATCHER_OPS or value_kind != "string":
                raise ValueError(f"not a label matcher: {label} {op} {value} in {expression!r}")
            matchers.append(Matcher(label, op, _unquote(value)))
            i += 3
            if tokens[i] == ("punct", ","):
                i += 1
        return matchers, i + 1

    while index < len(tokens):
        kind, text = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        if kind == "name" and text in _LABEL_LISTS:
            if following == ("punct", "("):
                index = _closing(tokens, index + 1) + 1  # label names, not metrics
            else:
                index += 1
        elif kind == "name" and (text in _KEYWORDS or following == ("punct", "(")
                                 or following in (("name", "by"), ("name", "without"))):
            index += 1  # a keyword, a function or an aggregation
        elif kind == "name":
            matchers = [Matcher("__name__", "=", text)]
            index += 1
            if following == ("punct", "{"):
                more, index = matchers_from(index)
                matchers += more
            found.append(Selector(tuple(matchers)))
        elif (kind, text) == ("punct", "{"):
            matchers, index = matchers_from(index)
            found.append(Selector(tuple(matchers)))
        elif (kind, text) == ("punct", "["):
            index = _closing(tokens, index, "[", "]") + 1  # a range or a subquery's
        else:
            index += 1
    return found


def _closing(tokens: list[tuple[str, str]], start: int, opening: str = "(",
             closing: str = ")") -> int:
    """The index of the bracket closing the one at ``start``."""
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index] == ("punct", opening):
            depth += 1
        elif tokens[index] == ("punct", closing):
            depth -= 1
            if depth == 0:
                return index
    raise ValueError(f"unbalanced {opening}{closing}")


def dashboard_selectors(dashboard: Mapping[str, Any]) -> list[tuple[str, Selector]]:
    """(where, selector) of every selector the dashboard reads: its panels' queries and its
    variables'."""
    found = [(f"panel {title!r}", selector)
             for title, expression in panel_queries(dashboard)
             for selector in selectors(expression)]
    for name, selector_text, _ in variable_queries(dashboard):
        found += [(f"variable {name!r}", selector) for selector in selectors(selector_text)]
    return found
