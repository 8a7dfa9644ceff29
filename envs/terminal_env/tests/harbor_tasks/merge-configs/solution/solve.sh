#!/bin/bash
python3 - <<'PY'
import json

def merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out

base = json.load(open("/app/base.json"))
over = json.load(open("/app/override.json"))
json.dump(merge(base, over), open("/app/merged.json", "w"), indent=2)
PY
