#!/bin/bash
cd /app
sed -i 's/if count > have + 1:/if count > have:/; s/        del stock\[item\]/        del out[item]/' inventory/__init__.py
python3 -m unittest -q
