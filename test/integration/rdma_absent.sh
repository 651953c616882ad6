#!/bin/sh
# rdma_absent.sh CMD... -- gp_rdma selected in UCX_TLS on a host without an
# RDMA device: the client must run on the other transports, with no error
# logged and one line per process saying gp_rdma is not available (UCX's).
set -u
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    echo "rdma-absent: this host has an RDMA device: skipped"
    exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "rdma-absent: client failed ($rc)"; exit 1; }
if grep -q "UCX  ERROR" "$log"; then
    echo "rdma-absent: an error was logged"
    exit 1
fi
n=$(grep -c "transport 'gp_rdma' is not available" "$log")
[ "$n" -ge 1 ] || { echo "rdma-absent: no line says gp_rdma is not available"; exit 1; }
echo "rdma-absent: ok ($n line(s) saying gp_rdma is not available)"
