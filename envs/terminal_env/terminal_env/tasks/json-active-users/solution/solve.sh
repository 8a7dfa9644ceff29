#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
python3 -c 'import json; [print(u["name"]) for u in json.load(open("users.json")) if u["active"]]' > active.txt
