"""format_table: the one entry point most callers need."""

from tablefmt import align as _align
from tablefmt.width import display_width, pad


def _cell(value, floatfmt):
    if isinstance(value, float):
        return format(value, floatfmt)
    if value is None:
        return ""
    return str(value)


def format_table(rows, headers=None, aligns=None, floatfmt="g", sep="  "):
    """Return rows (a list of sequences) as a plain-text table.

    headers is an optional list of column titles, underlined with dashes. aligns gives each column's alignment
    ("left", "right", "center" or "auto"); auto, the default, right-aligns columns of numbers. floatfmt formats
    float cells. Rows shorter than the widest row are padded with empty cells.
    """
    rows = [list(r) for r in rows]
    ncols = max([len(r) for r in rows] + [len(headers or [])] + [0])
    for r in rows:
        r.extend([""] * (ncols - len(r)))
    columns = [[r[i] for r in rows] for i in range(ncols)]
    alignment = _align.resolve(columns, aligns)
    text = [[_cell(v, floatfmt) for v in r] for r in rows]
    head = [str(h) for h in headers] + [""] * (ncols - len(headers)) if headers else None
    widths = [0] * ncols
    for line in text + ([head] if head else []):
        for i, cell in enumerate(line):
            widths[i] = max(widths[i], display_width(cell))
    out = []
    if head:
        out.append(sep.join(pad(h, widths[i], alignment[i]) for i, h in enumerate(head)).rstrip())
        out.append(sep.join("-" * w for w in widths))
    for line in text:
        out.append(sep.join(pad(c, widths[i], alignment[i]) for i, c in enumerate(line)).rstrip())
    return "\n".join(out)
