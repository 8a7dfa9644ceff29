#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'img_001.jpg' 'test -f photos/img_001.jpg'
check 'beach.png' 'test -f photos/beach.png'
check 'no uppercase names' '! ls photos | grep -q "[A-Z]"'
check 'three files' '[ "$(ls photos | wc -l)" -eq 3 ]'
echo "1..$n"
