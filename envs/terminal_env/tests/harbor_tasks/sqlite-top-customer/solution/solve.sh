#!/bin/bash
python3 - <<'PY'
import csv, sqlite3

db = sqlite3.connect("/app/shop.db")
rows = db.execute(
    """
    SELECT city, name, total FROM (
      SELECT c.city, c.name, SUM(o.cents) AS total,
             RANK() OVER (PARTITION BY c.city ORDER BY SUM(o.cents) DESC) AS r
      FROM customers c JOIN orders o ON o.customer_id = c.id AND o.cancelled = 0
      GROUP BY c.id)
    WHERE r = 1 ORDER BY city
    """
).fetchall()
with open("/app/top.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["city", "name", "cents"])
    w.writerows(rows)
PY
