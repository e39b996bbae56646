from tablefmt.width import display_width, pad


def test_plain_ascii_width():
    assert display_width("hello") == 5


def test_wide_characters_take_two_columns():
    assert display_width("日本") == 4


def test_combining_marks_take_none():
    assert display_width("e\u0301") == 1


def test_pad_right_aligns_by_columns():
    assert pad("日本", 6, "right") == "  日本"
