#!/bin/sh
echo "mode=${MODE:-unset}"
