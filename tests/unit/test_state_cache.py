"""The write-through cache of per-host values in front of a keyed stage's state."""

from __future__ import annotations

from crawl.state_cache import StateCache


def test_values_are_read_once_and_written_when_they_change() -> None:
    stored: dict[str, str | None] = {"a": "print-a"}
    reads: list[str] = []
    writes: list[tuple[str, str | None]] = []
    answers: StateCache[str | None] = StateCache(capacity=2)

    def read(host: str):
        return lambda: reads.append(host) or stored.get(host)

    def write(host: str):
        return lambda answer: writes.append((host, answer))

    assert answers.get("a", read("a")) == "print-a"
    assert answers.get("a", read("a")) == "print-a"
    assert reads == ["a"]
    answers.put("a", "print-a", write("a"))
    assert writes == []
    answers.put("a", "", write("a"))
    assert writes == [("a", "")]
    assert answers.get("b", read("b")) is None  # not asked yet, and remembered so
    assert answers.get("b", read("b")) is None
    assert reads == ["a", "b"]
    answers.get("c", read("c"))  # over capacity: the least recent ("a") goes
    assert answers.get("a", read("a")) == "print-a"
    assert reads == ["a", "b", "c", "a"]
