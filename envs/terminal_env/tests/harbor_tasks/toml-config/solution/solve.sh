#!/bin/bash
python3 - <<'PY'
import json
import tomli_w

data = json.load(open("/app/settings.json"))
with open("/app/settings.toml", "wb") as f:
    tomli_w.dump(data, f)
PY
