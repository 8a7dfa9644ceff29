#!/bin/bash
python3 - <<'PY'
import json, time, urllib.request

def get(page):
    for _ in range(50):  # the service may still be starting
        try:
            with urllib.request.urlopen(f"http://api:8000/items?page={page}", timeout=5) as r:
                return json.load(r)
        except OSError:
            time.sleep(0.2)
    raise SystemExit("api did not answer")

items, page = [], 1
while page is not None:
    data = get(page)
    items += data["items"]
    page = data["next"]
ok = [i for i in items if i["status"] == "ok"]
open("/app/answer.txt", "w").write(f"{len(ok)} {sum(i['size'] for i in ok)}\n")
PY
