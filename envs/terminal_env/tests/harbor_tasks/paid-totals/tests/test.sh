#!/bin/bash
# The expected lines, computed with jq from the image (a wrong answer differs).
want=$(jq -r '[.[] | select(.status == "paid")] | group_by(.customer)[]
              | "\(.[0].customer) \(map(.amount) | add)"' /app/orders.json)
got=$(cat /app/totals.txt 2>/dev/null)
if [ -n "$want" ] && [ "$got" = "$want" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  printf 'wanted:\n%s\ngot:\n%s\n' "$want" "$got"
  echo 0 > /logs/verifier/reward.txt
fi
