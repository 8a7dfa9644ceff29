#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'executable' 'test -x worker.sh'
check 'handles TERM' 'rm -f cleanup.txt; ./worker.sh & p=$!; sleep 0.5; kill -TERM $p; wait $p; s=$?; [ $s -eq 0 ] && [ "$(cat cleanup.txt)" = "cleaned up" ]'
echo "1..$n"
