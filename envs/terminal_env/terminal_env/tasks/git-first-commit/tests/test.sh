#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'is a repo' 'git -C repo rev-parse --git-dir'
check 'message' '[ "$(git -C repo log -1 --format=%s)" = "initial commit" ]'
check 'all committed' '[ -z "$(git -C repo status --porcelain)" ]'
check 'files tracked' '[ "$(git -C repo ls-files | wc -l)" -eq 2 ]'
echo "1..$n"
