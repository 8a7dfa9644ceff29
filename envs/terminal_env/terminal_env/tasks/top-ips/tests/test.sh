#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'three lines' '[ "$(wc -l < top3.txt)" -eq 3 ]'
check 'order' '[ "$(cat top3.txt)" = "$(printf "10.0.0.1\n192.168.1.5\n10.0.0.2")" ]'
echo "1..$n"
