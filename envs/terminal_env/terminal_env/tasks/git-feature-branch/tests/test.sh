#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'branch exists' 'git -C repo rev-parse --verify feature'
check 'file on feature' '[ "$(git -C repo show feature:feature.txt)" = "done" ]'
check 'main unchanged' '[ "$(git -C repo rev-parse main)" = "$(cat .main-head)" ]'
check 'feature is ahead of main' '[ "$(git -C repo rev-list --count main..feature)" -eq 1 ]'
echo "1..$n"
