#!/bin/bash
# /app/bundle.tar.gz holds parts.tar, which holds inner/vault.tar.gz, which holds the key.
set -euo pipefail
w=$(mktemp -d)
mkdir -p "$w/vault/keys" "$w/inner" "$w/outer/docs"
echo "decoy-1234" > "$w/vault/keys/old.key"
echo "amber-falcon-7391" > "$w/vault/keys/current.key"
tar -czf "$w/inner/vault.tar.gz" -C "$w" vault
echo "nothing here" > "$w/inner/README"
tar -cf "$w/outer/parts.tar" -C "$w" inner
echo "see parts" > "$w/outer/docs/index.txt"
tar -czf /app/bundle.tar.gz -C "$w/outer" .
rm -rf "$w"
