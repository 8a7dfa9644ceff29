#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cd photos && for f in *; do l=$(printf '%s' "$f" | tr 'A-Z' 'a-z'); [ "$f" = "$l" ] || mv "$f" "$l"; done
