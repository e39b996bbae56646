import pytest

from tablefmt import align


def test_integers_align_right():
    assert align.column_alignment(["1", "22", 333]) == "right"


def test_text_aligns_left():
    assert align.column_alignment(["1", "two", "3"]) == "left"


def test_empty_cells_are_ignored():
    assert align.column_alignment(["1.5", "", "2"]) == "right"


def test_unknown_alignment_is_an_error():
    with pytest.raises(ValueError, match="unknown alignment"):
        align.resolve([["x"]], ["middle"])
