#!/bin/bash
if [ "$(cat /app/key.txt 2>/dev/null)" = "amber-falcon-7391" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
