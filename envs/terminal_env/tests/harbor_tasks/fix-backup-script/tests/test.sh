#!/bin/bash
# A fresh tree the agent never saw; one point per file expected, none for extras.
src=$(mktemp -d) dest=$(mktemp -d)/out
mkdir -p "$src/a b/c" "$src/d"
echo one > "$src/top.conf"
echo two > "$src/a b/my app.conf"
echo three > "$src/a b/c/deep.conf"
echo skip > "$src/d/notes.txt"
bash /app/backup.sh "$src" "$dest" >/dev/null 2>&1
ok=0
[ "$(cat "$dest/top.conf.bak" 2>/dev/null)" = one ] && ok=$((ok + 1))
[ "$(cat "$dest/my app.conf.bak" 2>/dev/null)" = two ] && ok=$((ok + 1))
[ "$(cat "$dest/deep.conf.bak" 2>/dev/null)" = three ] && ok=$((ok + 1))
extra=$(find "$dest" -type f 2>/dev/null | wc -l)
[ "$extra" -eq 3 ] || ok=0
echo "passed $ok of 3 (files in dest: $extra)"
python3 -c "print(round($ok / 3, 4))" > /logs/verifier/reward.txt
