#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'keeps newest 3' 'd=$(mktemp -d); for x in 2025-12-30 2026-01-02 2026-01-01 2025-11-05 2026-01-03; do touch "$d/backup-$x.tar"; done; ./rotate.sh "$d" && [ "$(ls "$d" | tr "\n" " ")" = "backup-2026-01-01.tar backup-2026-01-02.tar backup-2026-01-03.tar " ]'
check 'few files untouched' 'd=$(mktemp -d); touch "$d/backup-2026-01-01.tar"; ./rotate.sh "$d" && [ -f "$d/backup-2026-01-01.tar" ]'
echo "1..$n"
