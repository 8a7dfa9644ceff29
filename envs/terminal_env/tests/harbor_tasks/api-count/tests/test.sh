#!/bin/bash
# The API's data is fixed: 17 items are ok, their sizes add up to 95.
if [ "$(cat /app/answer.txt 2>/dev/null)" = "17 95" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "got: $(head -c 200 /app/answer.txt 2>/dev/null)"
  echo 0 > /logs/verifier/reward.txt
fi
