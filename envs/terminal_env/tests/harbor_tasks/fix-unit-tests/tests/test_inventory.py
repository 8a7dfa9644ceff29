# ruff: noqa: PT009, PT027  (unittest: the image has no pytest)
import unittest

from inventory import restock, take


class InventoryTest(unittest.TestCase):
    def test_restock(self):
        self.assertEqual(restock({"nut": 1}, "nut", 2), {"nut": 3})

    def test_take_all(self):
        stock = {"nut": 2, "bolt": 1}
        self.assertEqual(take(stock, "nut", 2), {"bolt": 1})
        self.assertEqual(stock, {"nut": 2, "bolt": 1})

    def test_take_too_many(self):
        with self.assertRaises(ValueError):
            take({"nut": 2}, "nut", 3)


if __name__ == "__main__":
    unittest.main()
