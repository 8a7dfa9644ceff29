#!/bin/bash
set -e
w=$(mktemp -d)
tar -xzf /app/bundle.tar.gz -C "$w"
tar -xf "$w/parts.tar" -C "$w"
tar -xzf "$w/inner/vault.tar.gz" -C "$w"
cp "$w/vault/keys/current.key" /app/key.txt
