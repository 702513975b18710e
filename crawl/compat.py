"""One spelling for what the supported Pythons (3.10 to 3.12) provide differently.

``enum.StrEnum`` came with Python 3.11; on 3.10 :class:`StrEnum` is the same thing made from
``str`` and ``enum.Enum``: members are strings, and ``str()`` and ``format()`` give their value
(a plain ``str`` mix-in would give ``Status.FETCHED`` from ``str()``, and from ``format()`` too
on 3.12).
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
