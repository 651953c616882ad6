#!/bin/sh
# expect-segv.sh COMMAND...: succeeds only when COMMAND ends with a
# segmentation fault, as mpirun reports it (exit status 139: a rank died of
# SIGSEGV). For the runs that show what fails without gdrpipe's Open MPI glue.
"$@"
rc=$?
if [ "$rc" -eq 139 ]; then
    echo "expect-segv.sh: SIGSEGV, as expected"
    exit 0
fi
echo "expect-segv.sh: expected a SIGSEGV (exit status 139), got exit status $rc" >&2
exit 1
