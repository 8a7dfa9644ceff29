#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'run.sh executable' 'test -x run.sh'
check 'private.key is 600' '[ "$(stat -c %a private.key)" = "600" ]'
check 'run.sh runs' '[ "$(./run.sh)" = "ran" ]'
echo "1..$n"
