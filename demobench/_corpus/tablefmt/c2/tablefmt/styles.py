"""Table styles: plain (the default), markdown and grid."""

from tablefmt import align as _align
from tablefmt.core import format_table
from tablefmt.width import display_width, pad

STYLES = ("plain", "markdown", "grid")


def render(rows, headers=None, style="plain", **kwargs):
    """Return the table in the named style; kwargs go to format_table (plain) or set aligns and floatfmt."""
    if style == "plain":
        return format_table(rows, headers=headers, **kwargs)
    if style not in STYLES:
        raise ValueError("tablefmt: unknown style %r (want one of %s)" % (style, ", ".join(STYLES)))
    rows = [["" if v is None else str(v) for v in r] for r in rows]
    ncols = max([len(r) for r in rows] + [len(headers or [])] + [0])
    for r in rows:
        r.extend([""] * (ncols - len(r)))
    head = [str(h) for h in headers] + [""] * (ncols - len(headers)) if headers else [""] * ncols
    alignment = _align.resolve([[r[i] for r in rows] for i in range(ncols)], kwargs.get("aligns"))
    widths = [max([display_width(c) for c in [head[i]] + [r[i] for r in rows]] + [3]) for i in range(ncols)]
    if style == "markdown":
        return _markdown(rows, head, widths, alignment)
    return _grid(rows, head, widths, alignment)


def _markdown(rows, head, widths, alignment):
    def line(cells):
        return "| " + " | ".join(pad(c, widths[i], alignment[i]) for i, c in enumerate(cells)) + " |"

    rule = []
    for i, w in enumerate(widths):
        if alignment[i] == "right":
            rule.append("-" * (w - 1) + ":")
        elif alignment[i] == "center":
            rule.append(":" + "-" * (w - 2) + ":")
        else:
            rule.append("-" * w)
    return "\n".join([line(head), "| " + " | ".join(rule) + " |"] + [line(r) for r in rows])


def _grid(rows, head, widths, alignment):
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells):
        return "| " + " | ".join(pad(c, widths[i], alignment[i]) for i, c in enumerate(cells)) + " |"

    out = [border, line(head), border.replace("-", "=")]
    out += [line(r) for r in rows]
    out.append(border)
    return "\n".join(out)
