#!/bin/bash
# The expected rows are fixed by the database the image built.
want=$'city,name,cents\nLima,Di,2550\nOslo,Cy,2400\nRome,Ed,100'
got=$(tr -d '\r' < /app/top.csv 2>/dev/null)
if [ "$got" = "$want" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  printf 'wanted:\n%s\ngot:\n%s\n' "$want" "$got"
  echo 0 > /logs/verifier/reward.txt
fi
