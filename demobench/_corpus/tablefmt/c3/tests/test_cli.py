import io

from tablefmt.cli import main


def run(args, text):
    out = io.StringIO()
    code = main(args, stdin=io.StringIO(text), stdout=out)
    return code, out.getvalue()


def test_cli_plain():
    code, out = run([], "item,qty\nbolts,10\nnuts,250\n")
    assert code == 0
    assert out == "item   qty\n-----  ---\nbolts   10\nnuts   250\n"


def test_cli_markdown_no_header():
    code, out = run(["--style", "markdown", "--no-header"], "a,1\n")
    assert code == 0
    assert out.splitlines()[2] == "| a   |   1 |"
