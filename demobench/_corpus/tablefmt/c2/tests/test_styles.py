import unittest

from tablefmt.styles import render

from tests import fruit


class StylesTest(unittest.TestCase):
    def test_markdown_style(self):
        self.assertEqual(render(fruit(), headers=["fruit", "count"], style="markdown"), (
            "| fruit  | count |\n"
            "| ------ | ----: |\n"
            "| apples |     3 |\n"
            "| pears  |    12 |\n"
            "| figs   |   250 |"
        ))

    def test_grid_style(self):
        self.assertEqual(render([["a", "1"]], headers=["k", "v"], style="grid"), (
            "+-----+-----+\n"
            "| k   |   v |\n"
            "+=====+=====+\n"
            "| a   |   1 |\n"
            "+-----+-----+"
        ))

    def test_unknown_style(self):
        with self.assertRaisesRegex(ValueError, "unknown style"):
            render([["a"]], style="fancy")
