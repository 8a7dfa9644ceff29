#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'calc restored' '[ "$(python3 repo/calc.py)" = "4" ]'
check 'history kept' '[ "$(git -C repo rev-list --count HEAD)" -eq 4 ]'
check 'clean tree' '[ -z "$(git -C repo status --porcelain)" ]'
echo "1..$n"
