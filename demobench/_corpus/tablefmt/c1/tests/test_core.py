from tablefmt import format_table


def test_format_simple(fruit):
    assert format_table(fruit, headers=["fruit", "count"]) == (
        "fruit   count\n"
        "------  -----\n"
        "apples      3\n"
        "pears      12\n"
        "figs      250"
    )


def test_short_rows_are_padded():
    assert format_table([["a", "b"], ["c"]]) == "a  b\nc"


def test_float_format():
    assert format_table([["pi", 3.14159]], floatfmt=".2f") == "pi  3.14"


def test_explicit_alignment(fruit):
    lines = format_table(fruit, aligns=["right", "left"]).splitlines()
    assert lines[0] == "apples  3"
    assert lines[2] == "  figs  250"
