#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'failed list' '[ "$(cat failed.txt)" = "$(printf "b.sh\nd.sh")" ]'
echo "1..$n"
