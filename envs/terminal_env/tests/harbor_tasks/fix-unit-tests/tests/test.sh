#!/bin/bash
# The shipped tests (a fresh copy: edits to /app's do not count) and hidden ones.
work=$(mktemp -d)
cp -r /app/inventory "$work/" 2>/dev/null
cp /tests/test_inventory.py /tests/test_hidden.py "$work/"
cd "$work" || exit 1
if python3 -m unittest -q test_inventory test_hidden; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
