#!/bin/sh
# expect_error.sh TEXT COMMAND...: passes when COMMAND exits with status 1 (an error, not a crash or
# a usage exit) and its standard error contains TEXT; standard output goes to /dev/full when TEXT
# starts with "writing the output failed".
text=$1
shift
case "$text" in
  "writing the output failed"*) err=$("$@" 2>&1 >/dev/full) ;;
  *) err=$("$@" 2>&1 >/dev/null) ;;
esac
status=$?
printf '%s\n' "$err"
[ "$status" -eq 1 ] || { echo "expect_error: exit status $status, not 1"; exit 1; }
case "$err" in
  *"$text"*) exit 0 ;;
  *) echo "expect_error: the error does not say: $text"; exit 1 ;;
esac
