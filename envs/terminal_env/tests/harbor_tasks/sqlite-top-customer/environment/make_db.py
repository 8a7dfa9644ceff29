"""Build the shop database: customers, and orders of which some were cancelled."""

import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
db.executescript(
    """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL,
                         cents INTEGER NOT NULL, cancelled INTEGER NOT NULL DEFAULT 0);
    """
)
customers = [(1, "Ada", "Oslo"), (2, "Bo", "Lima"), (3, "Cy", "Oslo"), (4, "Di", "Lima"), (5, "Ed", "Rome")]
orders = [
    (1, 1, 1200, 0),
    (2, 1, 800, 0),
    (3, 2, 5000, 1),
    (4, 2, 700, 0),
    (5, 3, 1500, 0),
    (6, 3, 900, 0),
    (7, 4, 2500, 0),
    (8, 4, 300, 1),
    (9, 5, 4000, 1),
    (10, 5, 100, 0),
    (11, 1, 150, 1),
    (12, 4, 50, 0),
]
db.executemany("INSERT INTO customers VALUES (?, ?, ?)", customers)
db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", orders)
db.commit()
