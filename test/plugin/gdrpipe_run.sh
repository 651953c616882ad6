#!/bin/bash
# gdrpipe_run.sh SCRIPT PLUGIN: the launcher gdrpipe-run sets its defaults,
# leaves what the caller set alone, hands the variables to mpirun's ranks
# (-x), and refuses a missing plugin.
set -u
run=$1 plugin=$2
fail=0
check() {   # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fail=1; fi
}
getvar() { sed -n "s/^$1=//p"; }
out=$(env -u UCX_TLS -u UCX_RNDV_SCHEME -u UCX_RNDV_SEND_NBR_THRESH -u OMPI_MCA_pml \
      GDRPIPE_PLUGIN="$plugin" LD_PRELOAD= sh "$run" env)
check "LD_PRELOAD is the plugin" "$plugin" "$(getvar LD_PRELOAD <<<"$out")"
check "UCX_TLS default" "gdrpipe,self" "$(getvar UCX_TLS <<<"$out")"
check "UCX_RNDV_SCHEME default" "put_zcopy" "$(getvar UCX_RNDV_SCHEME <<<"$out")"
check "UCX_RNDV_SEND_NBR_THRESH default" "32k" "$(getvar UCX_RNDV_SEND_NBR_THRESH <<<"$out")"
check "OMPI_MCA_pml default" "ucx" "$(getvar OMPI_MCA_pml <<<"$out")"
out=$(GDRPIPE_PLUGIN="$plugin" LD_PRELOAD=/lib/other.so UCX_TLS=gdrpipe,cma,self \
      UCX_RNDV_SEND_NBR_THRESH=1m sh "$run" env)
check "the caller's UCX_TLS kept" "gdrpipe,cma,self" "$(getvar UCX_TLS <<<"$out")"
check "the caller's UCX_RNDV_SEND_NBR_THRESH kept" "1m" "$(getvar UCX_RNDV_SEND_NBR_THRESH <<<"$out")"
check "the plugin put before the caller's preload" "$plugin:/lib/other.so" "$(getvar LD_PRELOAD <<<"$out")"
# mpirun gets -x for each variable the ranks need
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\necho "$@"\n' > "$tmp/mpirun"
chmod +x "$tmp/mpirun"
out=$(GDRPIPE_PLUGIN="$plugin" sh "$run" "$tmp/mpirun" -np 2 ./app)
check "mpirun arguments" "-x LD_PRELOAD -x UCX_TLS -x UCX_RNDV_SCHEME -x UCX_RNDV_SEND_NBR_THRESH -np 2 ./app" "$out"
if err=$(GDRPIPE_PLUGIN="$tmp/missing.so" sh "$run" true 2>&1); then
    check "missing plugin refused" "exit 1" "exit 0"
else
    check "missing plugin refused" "gdrpipe-run: plugin not found: $tmp/missing.so (set GDRPIPE_PLUGIN)" "$err"
fi
# no command: the header comment as help (every line of it, nothing after), exit 2
help=$(GDRPIPE_PLUGIN="$plugin" sh "$run" 2>&1)
check "help exits 2" 2 "$?"
check "help lists the threshold it sets" 1 "$(grep -c '^  UCX_RNDV_SEND_NBR_THRESH' <<<"$help")"
check "help ends with the header" "them too." "$(tail -n 1 <<<"$help")"
exit $fail
