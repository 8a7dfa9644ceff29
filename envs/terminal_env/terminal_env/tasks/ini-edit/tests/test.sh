#!/bin/bash
# Verifier: each check prints a TAP line; the reward is the fraction that pass.
n=0
check() {
  n=$((n + 1))
  if ( eval "$2" ) >/dev/null 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
check 'server port' 'awk '\''/^\[server\]/{s=1;next} /^\[/{s=0} s && /^port/'\'' settings.ini | grep -qx '\''port = 9090'\'''
check 'metrics port' 'awk '\''/^\[metrics\]/{s=1;next} /^\[/{s=0} s && /^port/'\'' settings.ini | grep -qx '\''port = 8080'\'''
check 'rest unchanged' '[ "$(grep -c . settings.ini)" -eq 6 ] && grep -qx "host = 0.0.0.0" settings.ini'
echo "1..$n"
