import unittest

from tablefmt import align


class AlignTest(unittest.TestCase):
    def test_integers_align_right(self):
        self.assertEqual(align.column_alignment(["1", "22", 333]), "right")

    def test_text_aligns_left(self):
        self.assertEqual(align.column_alignment(["1", "two", "3"]), "left")

    def test_empty_cells_are_ignored(self):
        self.assertEqual(align.column_alignment(["1.5", "", "2"]), "right")

    def test_unknown_alignment_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "unknown alignment"):
            align.resolve([["x"]], ["middle"])
