#!/bin/bash
# debian-rootfs.sh -- build gdrpipe in a root filesystem of another Debian
# release with that release's own UCX, Open MPI, Catch2 and g++ (trixie:
# Debian 13, UCX 1.18.1, Open MPI 5.0.7; sid: unstable, UCX 1.23), run the
# unit, simulator and UCP/MPI integration suites there, and check that Debian
# 12's plugin (BUILD12, the native build) preloaded into that UCX refuses with
# one line while the program runs on. Needs root (debootstrap, chroot, mounts).
#
#   debian-rootfs.sh SUITE BUILD12     prints "== SUITE: N passed, M failed"
#   debian-rootfs.sh SUITE --prepare   makes the root filesystem only (CI
#                                      does that while the native suites run)
#
# The root filesystem is made with debootstrap from the archive this
# machine's apt uses, once (GDRPIPE_ROOTFS, default /var/tmp/gdrpipe-SUITE);
# with GDRPIPE_ROOTFS_CACHE=FILE.tar it is also kept as that tarball, which
# later runs unpack instead. The source
# tree is bind-mounted read-only at /src; the build goes to the rootfs.
set -uo pipefail
suite=${1:?usage: debian-rootfs.sh SUITE BUILD12|--prepare}
prepare_only=0
if [ "${2:-}" = --prepare ]; then
    prepare_only=1
else
    build12=$(cd "${2:?usage: debian-rootfs.sh SUITE BUILD12|--prepare}" && pwd)
fi
src=$(cd "$(dirname "$0")/.." && pwd)
cache=${GDRPIPE_ROOTFS_CACHE:-}
log=/tmp/gdrpipe-debootstrap-$suite.log
root=${GDRPIPE_ROOTFS:-/var/tmp/gdrpipe-$suite}
tmult=${GDRPIPE_TEST_TIMEOUT_MULT:-3}
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-$(sed -n 's/^deb \(http[^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)}
pkgs=libucx-dev,ucx-utils,openmpi-bin,libopenmpi-dev,libpmix-dev,meson,ninja-build,g++,pkg-config,catch2,libibverbs-dev,ibverbs-providers,procps,iproute2,util-linux

mounts=()
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null; done
}
trap cleanup EXIT
bind() {   # bind <host path> <path in the rootfs> [mount options]
    mkdir -p "$root$2"
    mount --bind "$1" "$root$2" && mounts+=("$root$2") || return 1
    [ -z "${3:-}" ] || mount -o "remount,bind,$3" "$root$2"
}

echo "== $suite: root filesystem"
if [ ! -x "$root/usr/bin/ucx_info" ]; then
    rm -rf "$root"; mkdir -p "$root"
    if [ -n "$cache" ] && [ -f "$cache" ]; then
        tar -C "$root" -xf "$cache" || exit 1
    else
        command -v debootstrap >/dev/null ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
        # debootstrap leaves some dependencies of --include unconfigured:
        # apt completes them inside
        debootstrap --variant=minbase --include="$pkgs" "$suite" "$root" "$mirror" \
            >$log 2>&1 || true
        cp /etc/resolv.conf "$root/etc/" 2>/dev/null
        # an archive copy may carry a Release file past its validity date
        echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99gdrpipe"
        chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive \
            apt-get -f install -y -q --no-install-recommends && apt-get clean' \
            >>$log 2>&1
        if [ ! -x "$root/usr/bin/ucx_info" ]; then
            echo "$suite: cannot make the root filesystem ($log)"
            echo "== $suite: 0 passed, 1 failed"; exit 1
        fi
        [ -z "$cache" ] || { mkdir -p "$(dirname "$cache")" && tar -C "$root" -cf "$cache" .; }
    fi
fi
# nvcc takes host compilers up to a GCC version of its own (CUDA 13.0: 15);
# where the release's g++ is newer (unstable's), the kernels are built with
# the newest one nvcc takes (meson finds g++-N), installed here once
cuda_gcc=$(sed -n 's/^#if __GNUC__ > \([0-9]*\)$/\1/p' \
    /usr/local/cuda/include/crt/host_config.h 2>/dev/null | head -1)
gcc_major=$(chroot "$root" g++ -dumpversion 2>/dev/null | cut -d. -f1)
if [ -n "$cuda_gcc" ] && [ -n "$gcc_major" ] && [ "$gcc_major" -gt "$cuda_gcc" ] &&
        [ ! -x "$root/usr/bin/g++-$cuda_gcc" ]; then
    echo "== $suite: g++ $gcc_major is newer than nvcc takes: installing g++-$cuda_gcc"
    chroot "$root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends g++-$cuda_gcc && apt-get clean" \
        >>"$log" 2>&1 || exit 1
    [ -z "$cache" ] || tar -C "$root" -cf "$cache" .
fi
# the Open MPI glue includes Open MPI's internal headers, which include
# PMIx's: Debian 13's libopenmpi-dev brings libpmix-dev, unstable's (Open MPI
# 6) does not; installed here once where a root filesystem lacks it
if ! chroot "$root" pkg-config --exists pmix 2>/dev/null; then
    echo "== $suite: installing libpmix-dev (the Open MPI glue needs PMIx's headers)"
    chroot "$root" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends libpmix-dev && apt-get clean" \
        >>"$log" 2>&1 || exit 1
    [ -z "$cache" ] || tar -C "$root" -cf "$cache" .
fi
[ $prepare_only = 0 ] || exit 0
# the root filesystem a mount point of its own (private: nothing mounted in
# it shows elsewhere): `ip netns`, which the two-host tests use
# (test/multihost/hosts.sh), makes / a slave mount in each namespace it
# enters, and fails where / is no mount point
mount --bind "$root" "$root" && mounts+=("$root") && mount --make-private "$root" || exit 1
bind /proc /proc && bind /dev /dev && bind /dev/shm /dev/shm && bind /dev/pts /dev/pts &&
    bind /sys /sys || exit 1
bind "$src" /src ro || exit 1
# the toolkit whole: nvcc builds the kernels the simulator tests run
bind /usr/local/cuda /usr/local/cuda ro || exit 1
bind "$build12" /build12 ro || exit 1

echo "== $suite: build (UCX $(chroot "$root" pkg-config --modversion ucx))"
chroot "$root" sh -c 'meson setup /b --wipe -Dwerror=true -Dbuildtype=debugoptimized \
        /src >/tmp/setup.log 2>&1 || meson setup /b -Dwerror=true \
        -Dbuildtype=debugoptimized /src' >/dev/null || { cat "$root/tmp/setup.log"; exit 1; }
chroot "$root" meson compile -C /b || exit 1

rc=0
pass=0 fail=0
count() {   # the last meson test log
    local p f json=$root/b/meson-logs/testlog.json
    p=$(grep -c '"result": "OK"' "$json" || true)
    f=$(grep -c '"result": "\(FAIL\|TIMEOUT\|ERROR\|UNEXPECTEDPASS\)"' "$json" || true)
    pass=$((pass + p)); fail=$((fail + f))
}
echo "== $suite: tests"
chroot "$root" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    meson test -C /b --print-errorlogs --timeout-multiplier "$tmult" \
    --num-processes 1 --suite unit --suite cudasim --suite integration --no-suite dist-once || rc=1
count

ucx=$(chroot "$root" pkg-config --modversion ucx | cut -d. -f1,2)
echo "== $suite: Debian 12's plugin preloaded into UCX $ucx"
out=$(chroot "$root" env LD_PRELOAD=/build12/plugin/libuct_gdrpipe.so ucx_info -v 2>&1)
st=$?
lines=$(printf '%s\n' "$out" | grep -c "gdrpipe was built for UCX 1.13 but the loaded UCX is $ucx")
if [ $st -eq 0 ] && [ "$lines" -eq 1 ] && printf '%s\n' "$out" | grep -q "Library version: $ucx"; then
    pass=$((pass + 1))
else
    echo "wrong-version load: exit $st, $lines refusal lines:"; printf '%s\n' "$out"
    fail=$((fail + 1))
fi

echo "== $suite: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ $rc -eq 0 ]
