#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'a.md fixed' '! grep -q colour docs/a.md && grep -q "color wheel" docs/a.md'
check 'nested fixed' '! grep -q colour docs/guide/b.md'
check 'txt unchanged' 'grep -q colour docs/notes.txt'
echo "1..$n"
