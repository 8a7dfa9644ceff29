#!/bin/bash
jq -r '[.[] | select(.status == "paid")] | group_by(.customer)[]
       | "\(.[0].customer) \(map(.amount) | add)"' /app/orders.json > /app/totals.txt
