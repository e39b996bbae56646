"""tablefmt: plain-text tables for terminals and logs.

>>> print(tablefmt.format_table([["apples", 3], ["pears", 12]], headers=["fruit", "count"]))
fruit   count
------  -----
apples      3
pears      12
"""

from tablefmt.core import format_table
from tablefmt.width import display_width

__all__ = ["format_table", "display_width"]
__version__ = "0.1.0"
