#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'hello.txt exists' 'test -f hello.txt'
check 'content is exact' '[ "$(cat hello.txt)" = "Hello, terminal!" ]'
check 'one line' '[ "$(wc -l < hello.txt)" -eq 1 ]'
echo "1..$n"
