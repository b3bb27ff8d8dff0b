#!/bin/sh
# not.sh EXPECTED_STATUS CMD...: runs CMD and succeeds only if it exits with EXPECTED_STATUS
# (a crash, e.g. a sanitizer abort, never matches).
want=$1; shift
"$@"
got=$?
if [ "$got" != "$want" ]; then
  echo "not.sh: expected exit status $want, got $got: $*" >&2
  exit 1
fi
exit 0
