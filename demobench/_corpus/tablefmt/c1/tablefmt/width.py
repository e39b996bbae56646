"""Display width of text in a terminal: wide East Asian characters take two columns, combining marks none."""

import unicodedata


def char_width(ch):
    """Return the number of terminal columns ch takes: 0, 1 or 2."""
    if unicodedata.combining(ch):
        return 0
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 2
    return 1


def display_width(text):
    """Return the number of terminal columns text takes."""
    return sum(char_width(ch) for ch in str(text))


def pad(text, width, align="left"):
    """Pad text with spaces to width columns, aligned left, right or center."""
    text = str(text)
    gap = max(0, width - display_width(text))
    if align == "right":
        return " " * gap + text
    if align == "center":
        left = gap // 2
        return " " * left + text + " " * (gap - left)
    return text + " " * gap
