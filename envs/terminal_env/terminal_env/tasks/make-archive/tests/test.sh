#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'archive exists' 'test -f backup.tar.gz'
check 'gzip format' 'gzip -t backup.tar.gz'
check 'has main.py' 'tar tzf backup.tar.gz | grep -qx '\''project/src/main.py'\'''
check 'content intact' '[ "$(tar xzOf backup.tar.gz project/README)" = "demo project" ]'
echo "1..$n"
