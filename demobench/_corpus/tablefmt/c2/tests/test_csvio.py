import unittest

from tablefmt.csvio import read_csv


class ReadCsvTest(unittest.TestCase):
    def test_read_csv_with_header(self):
        headers, rows = read_csv("name,qty\nbolt,10\nnut,25\n")
        self.assertEqual(headers, ["name", "qty"])
        self.assertEqual(rows, [["bolt", "10"], ["nut", "25"]])

    def test_read_csv_semicolons(self):
        _, rows = read_csv("a;b\n1;2\n", delimiter=";")
        self.assertEqual(rows, [["1", "2"]])

    def test_read_csv_empty_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "empty"):
            read_csv("")
