#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cat > greet.sh <<'EOF'
#!/bin/bash
name="$1"
if [ -z "$name" ]; then name=world; fi
echo "Hello, $name!"
EOF
chmod +x greet.sh
