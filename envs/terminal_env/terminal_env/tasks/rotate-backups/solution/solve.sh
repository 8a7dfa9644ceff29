#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cat > rotate.sh <<'EOF'
#!/bin/bash
cd "$1" || exit 1
ls backup-*.tar | sort | head -n -3 | xargs -r rm --
EOF
chmod +x rotate.sh
