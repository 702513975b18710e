"""One spelling for what the supported Pythons (3.10 to 3.12) provide differently.

``enum.StrEnum`` came with Python 3.11; on 3.10 :class:`StrEnum` is the same thing made from
``str`` and ``enum.Enum``. The synthetic web is the crawler's ground truth and imports nothing
of the crawler, so it has this of its own (``crawl.compat`` is the crawler's).
"""

from __future__ import annotations

import enum
import sys

__all__ = ["StrEnum"]

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:

    class StrEnum(str, enum.Enum):
        """An enumeration whose members are strings that print as their value."""

        __str__ = str.__str__
        __format__ = str.__format__
