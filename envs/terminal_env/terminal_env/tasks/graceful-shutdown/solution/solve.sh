#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cat > worker.sh <<'EOF'
#!/bin/bash
trap 'echo "cleaned up" > cleanup.txt; exit 0' TERM
while :; do sleep 0.1; done
EOF
chmod +x worker.sh
