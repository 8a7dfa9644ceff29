#!/bin/bash
cat > /app/backup.sh <<'SH'
#!/bin/bash
src=$1
dest=$2
mkdir -p -- "$dest"
find "$src" -type f -name '*.conf' -print0 |
  while IFS= read -r -d '' f; do
    cp -- "$f" "$dest/$(basename -- "$f").bak"
  done
SH
chmod 755 /app/backup.sh
