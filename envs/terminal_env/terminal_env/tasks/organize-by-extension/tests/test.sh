#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'txt files' 'test -f inbox/txt/a.txt && test -f inbox/txt/c.txt'
check 'log files' 'test -f inbox/log/b.log && test -f inbox/log/e.log'
check 'csv file' 'test -f inbox/csv/d.csv'
check 'nothing left at top' '[ -z "$(find inbox -maxdepth 1 -type f)" ]'
check 'content kept' 'grep -q "alpha" inbox/txt/a.txt'
echo "1..$n"
