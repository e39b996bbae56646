"""Reading tables from CSV text."""

import csv
import io


def read_csv(text, header=True, delimiter=","):
    """Return (headers, rows) read from CSV text; headers is None when header is False."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    rows = [r for r in reader if r]
    if not header:
        return None, rows
    if not rows:
        raise ValueError("tablefmt: the CSV input is empty")
    return rows[0], rows[1:]
