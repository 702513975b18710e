"""HTTP-dates (RFC 9110 5.6.7): the crawl's one parser of them, and the form it sends.

The parser is strict by default, for fields whose meaning hangs on the date (``Retry-After``
decides how long a host waits). Asked to be lenient, it reads the Internet Message Format's
dates too, as RFC 9110 encourages of recipients, for fields where a wrong date costs little
and a refused one loses what it said (``Last-Modified``).
"""

from __future__ import annotations

import calendar
import datetime
import email.utils
import re
import time

__all__ = ["format_http_date", "parse_http_date"]

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_DAY_LONG = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_MONTH = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})"
_MONTHS = {name: number for number, name in enumerate(calendar.month_abbr) if name}
#: RFC 9110 5.6.7: IMF-fixdate (preferred), then the obsolete RFC 850 and asctime forms.
_IMF_FIXDATE = re.compile(rf"{_DAY}, ([0-9]{{2}}) {_MONTH} ([0-9]{{4}}) {_TIME} GMT")
_RFC850_DATE = re.compile(rf"{_DAY_LONG}, ([0-9]{{2}})-{_MONTH}-([0-9]{{2}}) {_TIME} GMT")
_ASCTIME_DATE = re.compile(rf"{_DAY} {_MONTH} ([0-9]{{2}}| [0-9]) {_TIME} ([0-9]{{4}})")


def parse_http_date(value: str, now_ms: int, *, lenient: bool = False) -> int | None:
    """An HTTP-date (RFC 9110 5.6.7, all three forms) as milliseconds since the epoch, or None
    when ``value`` is not one (or names no real moment, such as 30 February).

    Surrounding whitespace is ignored; otherwise the grammar is strict (names are
    case-sensitive, GMT is the only zone). The weekday is not checked against the date. A
    two-digit RFC 850 year is the one of its century nearest ``now_ms``, never more than 50
    years ahead, as RFC 9110 requires. A leap second (``:60``) is the next second.

    With ``lenient``, text that is no HTTP-date is read as an Internet Message Format date
    (RFC 5322 with its obsolete forms, as :func:`email.utils.parsedate_to_datetime` reads
    them: names in any case, a numeric or North American zone, no seconds, a two-digit year
    taken as 1969 to 2068), provided it names its zone: a date without one (or with
    ``-0000``) says no moment. An HTTP-date reads the same in both modes.
    """
    text = value.strip()
    moment = _strict_http_date(text, now_ms)
    if moment is None and lenient:
        moment = _message_date(text)
    return moment


def _strict_http_date(text: str, now_ms: int) -> int | None:
    if match := _IMF_FIXDATE.fullmatch(text):
        day, month, year, hour, minute, second = match.groups()
        full_year = int(year)
    elif match := _RFC850_DATE.fullmatch(text):
        day, month, year, hour, minute, second = match.groups()
        this_year = time.gmtime(now_ms // 1000).tm_year
        full_year = this_year - this_year % 100 + int(year)
        if full_year > this_year + 50:
            full_year -= 100
    elif match := _ASCTIME_DATE.fullmatch(text):
        month, day, hour, minute, second, year = match.groups()
        full_year = int(year)
    else:
        return None
    numbers = (int(day), int(hour), int(minute), int(second))
    if numbers[1] > 23 or numbers[2] > 59 or numbers[3] > 60:
        return None
    try:
        datetime.date(full_year, _MONTHS[month], numbers[0])
    except ValueError:
        return None
    seconds = calendar.timegm((full_year, _MONTHS[month], *numbers, 0, 0, 0))
    return seconds * 1000


def _message_date(text: str) -> int | None:
    """An Internet Message Format date with its zone, in ms since the epoch, or None."""
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None or parsed.tzinfo is None:  # no zone, or -0000: no moment
        return None
    return int(parsed.timestamp()) * 1000


def format_http_date(seconds: int) -> str:
    """The IMF-fixdate of ``seconds`` since the epoch (``Sun, 06 Nov 1994 08:49:37 GMT``)."""
    return email.utils.formatdate(seconds, usegmt=True)
