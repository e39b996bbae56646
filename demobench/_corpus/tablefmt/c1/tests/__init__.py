"""Tests of tablefmt; run them with python3 -m unittest."""


def fruit():
    """A small table of names and counts, fresh for each test."""
    return [["apples", 3], ["pears", 12], ["figs", 250]]
