"""Column alignment: numbers to the right, text to the left, unless the caller says otherwise."""

import re

_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?$")


def is_number(cell):
    """Return True when cell is a number: an int or float, or a string that spells one ("12", "3.5", "-4")."""
    if isinstance(cell, bool):
        return False
    if isinstance(cell, (int, float)):
        return True
    return bool(_NUMBER.match(str(cell).strip()))


def column_alignment(cells):
    """Return "right" when every non-empty cell of a column is a number, else "left"."""
    values = [c for c in cells if str(c).strip() != ""]
    if values and all(is_number(c) for c in values):
        return "right"
    return "left"


def resolve(columns, requested=None):
    """Return the alignment of each column: requested[i] when given (not None or "auto"), else detected."""
    out = []
    for i, cells in enumerate(columns):
        want = requested[i] if requested and i < len(requested) else None
        if want in (None, "auto"):
            want = column_alignment(cells)
        if want not in ("left", "right", "center"):
            raise ValueError("tablefmt: unknown alignment %r for column %d" % (want, i))
        out.append(want)
    return out
