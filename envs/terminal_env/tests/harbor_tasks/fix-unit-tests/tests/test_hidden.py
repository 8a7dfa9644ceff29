# ruff: noqa: PT009, PT027  (unittest: the image has no pytest)
import unittest

from inventory import take


class HiddenTest(unittest.TestCase):
    def test_take_some(self):
        stock = {"gear": 5}
        self.assertEqual(take(stock, "gear", 3), {"gear": 2})
        self.assertEqual(stock, {"gear": 5})

    def test_take_exactly_one_more(self):
        with self.assertRaises(ValueError):
            take({"gear": 1}, "gear", 2)

    def test_take_missing(self):
        with self.assertRaises(ValueError):
            take({}, "cog", 1)
