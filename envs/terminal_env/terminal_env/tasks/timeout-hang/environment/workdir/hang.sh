#!/bin/sh
while :; do sleep 1; done
