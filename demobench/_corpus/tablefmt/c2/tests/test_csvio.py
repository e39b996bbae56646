import pytest

from tablefmt.csvio import read_csv


def test_read_csv_with_header():
    headers, rows = read_csv("name,qty\nbolt,10\nnut,25\n")
    assert headers == ["name", "qty"]
    assert rows == [["bolt", "10"], ["nut", "25"]]


def test_read_csv_semicolons():
    _, rows = read_csv("a;b\n1;2\n", delimiter=";")
    assert rows == [["1", "2"]]


def test_read_csv_empty_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        read_csv("")
