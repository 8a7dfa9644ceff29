#!/bin/bash
python3 - <<'PY'
import csv
from tabulate import tabulate

with open("/app/scores.csv", newline="") as f:
    rows = list(csv.reader(f))
header, body = rows[0], rows[1:]
body.sort(key=lambda r: (-int(r[2]), r[0]))
with open("/app/scores.md", "w") as f:
    f.write(tabulate(body, headers=header, tablefmt="github") + "\n")
PY
