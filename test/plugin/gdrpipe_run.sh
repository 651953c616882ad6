#!/bin/bash
# gdrpipe_run.sh SCRIPT PLUGIN: the launcher gdrpipe-run sets its defaults,
# leaves what the caller set alone, hands the variables to mpirun's ranks
# (-x), adds the Open MPI glue where there is one (component path first,
# interposer preloaded), and refuses a missing plugin.
set -u
run=$1 plugin=$2
fail=0
check() {   # check WHAT EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fail=1; fi
}
getvar() { sed -n "s/^$1=//p"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(env -u UCX_TLS -u UCX_RNDV_SCHEME -u UCX_RNDV_SEND_NBR_THRESH -u OMPI_MCA_pml \
      -u OMPI_MCA_mca_base_component_path GDRPIPE_OMPI_DIR="$tmp/none" \
      GDRPIPE_PLUGIN="$plugin" LD_PRELOAD= UCX_PROTO_ENABLE=n sh "$run" env)
check "LD_PRELOAD is the plugin" "$plugin" "$(getvar LD_PRELOAD <<<"$out")"
check "UCX_TLS default" "gdrpipe,self" "$(getvar UCX_TLS <<<"$out")"
check "UCX_RNDV_SCHEME default under protocol v1" "put_zcopy" "$(getvar UCX_RNDV_SCHEME <<<"$out")"
# under protocol v2 the scheme stays UCX's (v2's put waits for a fence)
out2=$(env -u UCX_RNDV_SCHEME GDRPIPE_OMPI_DIR="$tmp/none" GDRPIPE_PLUGIN="$plugin" \
       UCX_PROTO_ENABLE=y sh "$run" env)
check "UCX_RNDV_SCHEME under protocol v2: not set" "" "$(getvar UCX_RNDV_SCHEME <<<"$out2")"
check "UCX_RNDV_SEND_NBR_THRESH default" "32k" "$(getvar UCX_RNDV_SEND_NBR_THRESH <<<"$out")"
check "OMPI_MCA_pml default" "ucx" "$(getvar OMPI_MCA_pml <<<"$out")"
check "no Open MPI glue: component path left alone" "" "$(getvar OMPI_MCA_mca_base_component_path <<<"$out")"
# with the Open MPI glue: its folder first in the component path, the
# interposer preloaded after the plugin
mkdir "$tmp/glue"
touch "$tmp/glue/mca_coll_gdrpipe.so" "$tmp/glue/libgdrpipe_ompi.so"
out=$(env -u OMPI_MCA_mca_base_component_path GDRPIPE_OMPI_DIR="$tmp/glue" \
      GDRPIPE_PLUGIN="$plugin" LD_PRELOAD= HOME=/home/u sh "$run" env)
check "glue: preloads" "$plugin:$tmp/glue/libgdrpipe_ompi.so" "$(getvar LD_PRELOAD <<<"$out")"
check "glue: component path" "$tmp/glue:" \
      "$(getvar OMPI_MCA_mca_base_component_path <<<"$out" | sed 's/:.*/:/')"
check "glue: Open MPI's default path kept, per-user folder last" "/home/u/.openmpi/components" \
      "$(getvar OMPI_MCA_mca_base_component_path <<<"$out" | sed 's/.*://')"
# a relocated Open MPI (OPAL_PREFIX): its default folder under the new prefix
out=$(env -u OMPI_MCA_mca_base_component_path GDRPIPE_OMPI_DIR="$tmp/glue" OPAL_PREFIX=/opt/ompi \
      GDRPIPE_PLUGIN="$plugin" LD_PRELOAD= HOME=/home/u sh "$run" env)
# e.g. /opt/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 for Debian's /usr
mid=$(getvar OMPI_MCA_mca_base_component_path <<<"$out" | cut -d: -f2)
case $mid in
/opt/ompi/?*) mid=ok ;;
esac
check "relocated: Open MPI's default path under OPAL_PREFIX" ok "$mid"
out=$(OMPI_MCA_mca_base_component_path=/opt/x GDRPIPE_OMPI_DIR="$tmp/glue" \
      GDRPIPE_PLUGIN="$plugin" sh "$run" env)
check "glue: the caller's component path kept" "$tmp/glue:/opt/x" \
      "$(getvar OMPI_MCA_mca_base_component_path <<<"$out")"
out=$(GDRPIPE_OMPI_DIR="$tmp/none" GDRPIPE_PLUGIN="$plugin" LD_PRELOAD=/lib/other.so UCX_TLS=gdrpipe,cma,self \
      UCX_RNDV_SEND_NBR_THRESH=1m sh "$run" env)
check "the caller's UCX_TLS kept" "gdrpipe,cma,self" "$(getvar UCX_TLS <<<"$out")"
check "the caller's UCX_RNDV_SEND_NBR_THRESH kept" "1m" "$(getvar UCX_RNDV_SEND_NBR_THRESH <<<"$out")"
check "the plugin put before the caller's preload" "$plugin:/lib/other.so" "$(getvar LD_PRELOAD <<<"$out")"
# mpirun gets -x for each variable the ranks need (OMPI_MCA_* travel anyway)
printf '#!/bin/sh\necho "$@"\n' > "$tmp/mpirun"
chmod +x "$tmp/mpirun"
out=$(env -u UCX_RNDV_SCHEME GDRPIPE_PLUGIN="$plugin" UCX_PROTO_ENABLE=n sh "$run" "$tmp/mpirun" -np 2 ./app)
check "mpirun arguments" "-x LD_PRELOAD -x UCX_TLS -x UCX_RNDV_SEND_NBR_THRESH -x UCX_RNDV_SCHEME -np 2 ./app" "$out"
out=$(env -u UCX_RNDV_SCHEME GDRPIPE_PLUGIN="$plugin" UCX_PROTO_ENABLE=y sh "$run" "$tmp/mpirun" -np 2 ./app)
check "mpirun arguments under protocol v2" "-x LD_PRELOAD -x UCX_TLS -x UCX_RNDV_SEND_NBR_THRESH -np 2 ./app" "$out"
if err=$(GDRPIPE_PLUGIN="$tmp/missing.so" sh "$run" true 2>&1); then
    check "missing plugin refused" "exit 1" "exit 0"
else
    check "missing plugin refused" "gdrpipe-run: plugin not found: $tmp/missing.so (set GDRPIPE_PLUGIN)" "$err"
fi
# no command: the header comment as help (every line of it, nothing after), exit 2
help=$(GDRPIPE_PLUGIN="$plugin" sh "$run" 2>&1)
check "help exits 2" 2 "$?"
check "help lists the threshold it sets" 1 "$(grep -c '^  UCX_RNDV_SEND_NBR_THRESH' <<<"$help")"
check "help ends with the header" "ranks on other hosts get them too." "$(tail -n 1 <<<"$help")"
exit $fail
