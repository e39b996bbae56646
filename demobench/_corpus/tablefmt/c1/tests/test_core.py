import unittest

from tablefmt import format_table

from tests import fruit


class CoreTest(unittest.TestCase):
    def test_format_simple(self):
        self.assertEqual(format_table(fruit(), headers=["fruit", "count"]), (
            "fruit   count\n"
            "------  -----\n"
            "apples      3\n"
            "pears      12\n"
            "figs      250"
        ))

    def test_short_rows_are_padded(self):
        self.assertEqual(format_table([["a", "b"], ["c"]]), "a  b\nc")

    def test_float_format(self):
        self.assertEqual(format_table([["pi", 3.14159]], floatfmt=".2f"), "pi  3.14")

    def test_explicit_alignment(self):
        lines = format_table(fruit(), aligns=["right", "left"]).splitlines()
        self.assertEqual(lines[0], "apples  3")
        self.assertEqual(lines[2], "  figs  250")
