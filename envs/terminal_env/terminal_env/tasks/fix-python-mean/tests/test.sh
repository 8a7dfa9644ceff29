#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'mean' 'python3 -c "import stats; assert stats.mean([1, 2, 3, 4]) == 2.5"'
check 'median odd' 'python3 -c "import stats; assert stats.median([3, 1, 2]) == 2"'
check 'median even' 'python3 -c "import stats; assert stats.median([4, 1, 3, 2]) == 2.5"'
echo "1..$n"
