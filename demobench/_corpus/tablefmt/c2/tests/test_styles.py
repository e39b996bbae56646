import pytest

from tablefmt.styles import render


def test_markdown_style(fruit):
    assert render(fruit, headers=["fruit", "count"], style="markdown") == (
        "| fruit  | count |\n"
        "| ------ | ----: |\n"
        "| apples |     3 |\n"
        "| pears  |    12 |\n"
        "| figs   |   250 |"
    )


def test_grid_style():
    assert render([["a", "1"]], headers=["k", "v"], style="grid") == (
        "+-----+-----+\n"
        "| k   |   v |\n"
        "+=====+=====+\n"
        "| a   |   1 |\n"
        "+-----+-----+"
    )


def test_unknown_style():
    with pytest.raises(ValueError, match="unknown style"):
        render([["a"]], style="fancy")
