#!/bin/bash
src=$1
dest=$2
mkdir -p $dest
for f in $(ls $src/*.conf); do
  cp $f $dest/$(basename $f).bak
done
