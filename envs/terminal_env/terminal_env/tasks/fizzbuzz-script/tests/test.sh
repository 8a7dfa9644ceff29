#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'executable' 'test -x fizzbuzz.sh'
check '15' '[ "$(./fizzbuzz.sh 15 | tr "\n" " ")" = "1 2 Fizz 4 Buzz Fizz 7 8 Fizz Buzz 11 Fizz 13 14 FizzBuzz " ]'
check '1' '[ "$(./fizzbuzz.sh 1)" = "1" ]'
echo "1..$n"
