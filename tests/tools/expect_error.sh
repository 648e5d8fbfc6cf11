#!/bin/sh
# expect_error.sh TEXT COMMAND...: passes when COMMAND exits with status 1 (an error, not a crash or
# a usage exit; $EXPECT_STATUS when set, as 2 for a bad input file) and its standard error contains
# TEXT; standard output goes to /dev/full when TEXT starts with "writing the output failed".
text=$1
shift
case "$text" in
  "writing the output failed"*) err=$("$@" 2>&1 >/dev/full) ;;
  *) err=$("$@" 2>&1 >/dev/null) ;;
esac
status=$?
printf '%s\n' "$err"
want=${EXPECT_STATUS:-1}
[ "$status" -eq "$want" ] || { echo "expect_error: exit status $status, not $want"; exit 1; }
case "$err" in
  *"$text"*) exit 0 ;;
  *) echo "expect_error: the error does not say: $text"; exit 1 ;;
esac
