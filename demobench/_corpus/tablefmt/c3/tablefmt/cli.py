"""The tablefmt command: CSV on standard input, a table on standard output."""

import argparse
import sys

from tablefmt.csvio import read_csv
from tablefmt.styles import STYLES, render


def main(argv=None, stdin=None, stdout=None):
    """Run the command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="tablefmt", description="Format CSV as a plain-text table.")
    parser.add_argument("--style", choices=STYLES, default="plain", help="table style (default: plain)")
    parser.add_argument("--delimiter", default=",", help="CSV field delimiter (default: ,)")
    parser.add_argument("--no-header", action="store_true", help="the first CSV row is data, not headers")
    parser.add_argument("--align", default="", help="comma-separated alignments, one per column (left,right,...)")
    args = parser.parse_args(argv)
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        headers, rows = read_csv(stdin.read(), header=not args.no_header, delimiter=args.delimiter)
        aligns = [a.strip() or "auto" for a in args.align.split(",")] if args.align else None
        stdout.write(render(rows, headers=headers, style=args.style, aligns=aligns) + "\n")
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    return 0
