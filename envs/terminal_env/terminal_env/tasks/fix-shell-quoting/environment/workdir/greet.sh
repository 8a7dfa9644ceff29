#!/bin/bash
name=$1
if [ -z $name ]; then name=world; fi
echo Hello, $name!
