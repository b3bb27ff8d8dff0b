#!/bin/sh
# An assembler that kills the compiler running it (tdslc, or its split compile's
# worker; KILL_UP=2: that worker's parent) with signal $KILL_SIG (default ABRT:
# libgccjit's abort out of memory), in the middle of libgccjit's compile.
pid=$PPID
[ "${KILL_UP:-1}" = 2 ] && pid=$(cut -d' ' -f4 /proc/$pid/stat)
kill -"${KILL_SIG:-ABRT}" $pid
sleep 1
exit 1
