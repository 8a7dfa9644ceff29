#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cat > stats.py <<'EOF'
def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
EOF
