"""HTTP-dates (crawl.http.dates): RFC 9110's three forms read strictly, the Internet Message
Format's dates read too when asked to be lenient, and the form the crawler sends."""

from __future__ import annotations

import calendar

import pytest

from crawl.http.dates import format_http_date, parse_http_date


def _at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) * 1000


#: "Now" for the date tables: 2026-11-22 04:53:05 UTC.
NOW = _at(2026, 11, 22, 4, 53, 5)
RFC_EXAMPLE = _at(1994, 11, 6, 8, 49, 37)

HTTP_DATES = [
    # the three forms of RFC 9110 5.6.7, with its own example
    ("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
    ("Sunday, 06-Nov-94 08:49:37 GMT", RFC_EXAMPLE),
    ("Sun Nov  6 08:49:37 1994", RFC_EXAMPLE),
    ("Sun Nov 06 08:49:37 1994", RFC_EXAMPLE),  # date3 allows 2DIGIT too
    ("Sun Nov 16 08:49:37 1994", _at(1994, 11, 16, 8, 49, 37)),
    # every month name, day boundaries, a leap day
    ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
    ("Tue, 28 Feb 2023 23:59:59 GMT", _at(2023, 2, 28, 23, 59, 59)),
    ("Thu, 29 Feb 2024 12:00:00 GMT", _at(2024, 2, 29, 12)),
    ("Wed, 31 Mar 2027 00:00:00 GMT", _at(2027, 3, 31)),
    ("Fri, 30 Apr 2027 00:00:00 GMT", _at(2027, 4, 30)),
    ("Mon, 31 May 2027 00:00:00 GMT", _at(2027, 5, 31)),
    ("Wed, 30 Jun 2027 00:00:00 GMT", _at(2027, 6, 30)),
    ("Sat, 31 Jul 2027 00:00:00 GMT", _at(2027, 7, 31)),
    ("Tue, 31 Aug 2027 00:00:00 GMT", _at(2027, 8, 31)),
    ("Thu, 30 Sep 2027 00:00:00 GMT", _at(2027, 9, 30)),
    ("Sun, 31 Oct 2027 00:00:00 GMT", _at(2027, 10, 31)),
    ("Fri, 31 Dec 2027 23:59:59 GMT", _at(2027, 12, 31, 23, 59, 59)),
    # a leap second is the next second
    ("Sat, 31 Dec 2016 23:59:60 GMT", _at(2017, 1, 1)),
    # the weekday is not checked against the date
    ("Mon, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
    # surrounding whitespace is ignored
    ("  Sun, 06 Nov 1994 08:49:37 GMT\t", RFC_EXAMPLE),
    # two-digit years (now is 2026): never more than 50 years ahead
    ("Sunday, 22-Nov-26 04:53:05 GMT", NOW),
    ("Saturday, 01-Jan-00 00:00:00 GMT", _at(2000, 1, 1)),
    ("Wednesday, 01-Jan-76 00:00:00 GMT", _at(2076, 1, 1)),
    ("Friday, 01-Jan-77 00:00:00 GMT", _at(1977, 1, 1)),
    ("Friday, 31-Dec-99 23:59:59 GMT", _at(1999, 12, 31, 23, 59, 59)),
]


@pytest.mark.parametrize(("text", "expected"), HTTP_DATES)
def test_parse_http_date(text: str, expected: int) -> None:
    assert parse_http_date(text, NOW) == expected


NOT_HTTP_DATES = [
    "",
    "   ",
    "now",
    "0",
    "120",
    # a zone other than GMT, or none where one is required
    "Sun, 06 Nov 1994 08:49:37 UTC",
    "Sun, 06 Nov 1994 08:49:37 +0000",
    "Sun, 06 Nov 1994 08:49:37",
    "Sun Nov  6 08:49:37 1994 GMT",
    # names are case-sensitive and must be real
    "sun, 06 Nov 1994 08:49:37 GMT",
    "Sun, 06 NOV 1994 08:49:37 GMT",
    "Sun, 06 Nox 1994 08:49:37 GMT",
    "Sunday, 06 Nov 1994 08:49:37 GMT",  # the long day name belongs to RFC 850 only
    "Sun, 06-Nov-94 08:49:37 GMT",  # ... and RFC 850 needs it
    # field widths
    "Sun, 6 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 94 08:49:37 GMT",
    "Sun, 06 Nov 1994 8:49:37 GMT",
    "Sunday, 06-Nov-1994 08:49:37 GMT",
    "Sun Nov 6 08:49:37 1994",
    # dates and times that do not exist
    "Fri, 30 Feb 2024 00:00:00 GMT",
    "Tue, 29 Feb 2023 00:00:00 GMT",
    "Sun, 31 Nov 1994 08:49:37 GMT",
    "Sun, 00 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 1994 24:00:00 GMT",
    "Sun, 06 Nov 1994 08:60:00 GMT",
    "Sun, 06 Nov 1994 08:49:61 GMT",
    "Sat, 01 Jan 0000 00:00:00 GMT",
    # spacing and punctuation
    "Sun,  06 Nov 1994 08:49:37 GMT",
    "Sun 06 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 1994 08.49.37 GMT",
    # digits that are not ASCII
    "Sun, ٠٦ Nov 1994 08:49:37 GMT",
]


@pytest.mark.parametrize("text", NOT_HTTP_DATES)
def test_parse_http_date_refuses_junk(text: str) -> None:
    assert parse_http_date(text, NOW) is None


# -- lenient ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), HTTP_DATES)
def test_an_http_date_reads_the_same_when_lenient(text: str, expected: int) -> None:
    # Two-digit RFC 850 years included: placed by RFC 9110's rule, not by email.utils' own.
    assert parse_http_date(text, NOW, lenient=True) == expected


MESSAGE_DATES = [
    # forms servers send besides RFC 9110's
    ("Sun, 06 Nov 1994 08:49:37 +0000", RFC_EXAMPLE),
    ("Sun, 06 Nov 1994 09:49:37 +0100", RFC_EXAMPLE),
    ("Sun, 06 Nov 1994 03:49:37 EST", RFC_EXAMPLE),
    ("Sun, 06 Nov 1994 08:49:37 UTC", RFC_EXAMPLE),
    ("sun, 06 nov 1994 08:49:37 GMT", RFC_EXAMPLE),
    ("SUN, 06 NOV 1994 08:49:37 gmt", RFC_EXAMPLE),
    ("Sun, 6 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
    ("06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
    ("Sunday, 06-Nov-94 08:49:37 +0000", RFC_EXAMPLE),
    ("Sun, 06 Nov 94 08:49:37 GMT", RFC_EXAMPLE),
    ("Sun, 06 Nov 1994 08:49 GMT", RFC_EXAMPLE - 37_000),
    # a two-digit year outside RFC 850's form: 1969 to 2068
    ("Sun, 06 Nov 68 08:49:37 GMT", _at(2068, 11, 6, 8, 49, 37)),
    ("Sun, 06 Nov 69 08:49:37 GMT", _at(1969, 11, 6, 8, 49, 37)),
]


@pytest.mark.parametrize(("text", "expected"), MESSAGE_DATES)
def test_lenient_reads_message_dates_too(text: str, expected: int) -> None:
    assert parse_http_date(text, NOW) is None
    assert parse_http_date(text, NOW, lenient=True) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "0",
        # no zone, or one that says the moment is unknown (RFC 5322 3.3) or is unknown itself
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 -0000",
        "Sun, 06 Nov 1994 08:49:37 XYZ",
        "sun nov  6 08:49:37 1994",
        # moments that do not exist
        "Fri, 30 Feb 2024 00:00:00 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
    ],
)
def test_lenient_still_refuses_what_names_no_moment(text: str) -> None:
    assert parse_http_date(text, NOW, lenient=True) is None


# -- the form sent ----------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [0, 784_111_777, 1_700_000_000, 2**32 - 1])
def test_the_form_sent_is_an_imf_fixdate_the_strict_parser_reads(seconds: int) -> None:
    text = format_http_date(seconds)
    assert parse_http_date(text, NOW) == seconds * 1000


def test_format_http_date() -> None:
    assert format_http_date(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT"
