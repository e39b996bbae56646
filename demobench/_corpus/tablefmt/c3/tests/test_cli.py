import io
import unittest

from tablefmt.cli import main


def run(args, text):
    out = io.StringIO()
    code = main(args, stdin=io.StringIO(text), stdout=out)
    return code, out.getvalue()


class CliTest(unittest.TestCase):
    def test_cli_plain(self):
        code, out = run([], "item,qty\nbolts,10\nnuts,250\n")
        self.assertEqual(code, 0)
        self.assertEqual(out, "item   qty\n-----  ---\nbolts   10\nnuts   250\n")

    def test_cli_markdown_no_header(self):
        code, out = run(["--style", "markdown", "--no-header"], "a,1\n")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines()[2], "| a   |   1 |")
