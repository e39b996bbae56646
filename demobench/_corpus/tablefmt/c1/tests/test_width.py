import unittest

from tablefmt.width import display_width, pad


class WidthTest(unittest.TestCase):
    def test_plain_ascii_width(self):
        self.assertEqual(display_width("hello"), 5)

    def test_wide_characters_take_two_columns(self):
        self.assertEqual(display_width("日本"), 4)

    def test_combining_marks_take_none(self):
        self.assertEqual(display_width("e\u0301"), 1)

    def test_pad_right_aligns_by_columns(self):
        self.assertEqual(pad("日本", 6, "right"), "  日本")
