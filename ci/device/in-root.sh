#!/bin/bash
# in-root.sh ROOT CMD... -- run CMD (a bash command line) inside another
# distribution's root filesystem on the GPU machine, from /src (this
# repository): Debian 13's Open MPI and UCX with the machine's own driver.
#
# ROOT is a root filesystem made on Debian with debootstrap and trimmed to
# what the runs need (kept out of git, carried to the GPU machine). This
# mounts the kernel's file systems, the repository, CUDA and the driver's
# libraries into it (as root), runs CMD there with a clean environment
# (LD_LIBRARY_PATH: the driver, then CUDA), and unmounts again. Exit status:
# CMD's, or 2 when ROOT cannot be entered.
set -u
root=$(cd "${1:?usage: in-root.sh ROOT CMD...}" && pwd) || exit 2
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
mounted=()
bind() {   # bind SRC DST
    mkdir -p "$root$2" || return 1
    mountpoint -q "$root$2" && return 0
    mount --bind "$1" "$root$2" || return 1
    mounted=("$root$2" "${mounted[@]}")
}
cleanup() { local m; for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null; done; }
trap cleanup EXIT
ok=1
for d in /proc /sys /dev /dev/shm /dev/pts; do
    [ -d "$d" ] || continue
    bind "$d" "$d" || ok=0
done
bind "$repo" /src || ok=0
[ ! -d /usr/local/cuda ] || bind "$(readlink -f /usr/local/cuda)" /usr/local/cuda || ok=0
if [ $ok = 0 ]; then
    echo "in-root.sh: could not mount into $root (are we root?)" >&2
    exit 2
fi
# the driver's libraries: its own folder where it has one, else copies of
# the host's (the host's library folder is not the root's)
drv=
if [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]; then
    bind /usr/local/nvidia /usr/local/nvidia && drv=/usr/local/nvidia/lib64
else
    mkdir -p "$root/drv"
    cp -a /usr/lib/x86_64-linux-gnu/libcuda.so* /usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so* \
        "$root/drv/" 2>/dev/null && drv=/drv
fi
[ -n "$drv" ] || echo "in-root.sh: no libcuda.so.1 found for $root" >&2
mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root TERM=dumb \
    LD_LIBRARY_PATH="$drv:/usr/local/cuda/lib64" \
    /bin/bash -c "cd /src && $*"
