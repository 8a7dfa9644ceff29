#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check '1 2 3' '[ "$(python3 sum.py 1 2 3)" = "6" ]'
check 'negative' '[ "$(python3 sum.py -5 2)" = "-3" ]'
check 'none' '[ "$(python3 sum.py)" = "0" ]'
echo "1..$n"
