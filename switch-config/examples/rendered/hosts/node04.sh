#!/bin/sh
# node04 RoCE host profile: rendered by spinelctl from fabric intent gpu-a (spinel.dev/fabric-intent/v1).
# Change the intent and render again rather than editing this file.
set -eu

# ens1f0np0 -> leaf03 Ethernet2/1
ip link set dev ens1f0np0 mtu 9000
dcb pfc set dev ens1f0np0 prio-pfc all:off 3:on
dcb app add dev ens1f0np0 dscp-prio 26:3 48:6
for d in /sys/class/net/ens1f0np0/device/infiniband/*; do dev=${d##*/}; mkdir -p /sys/kernel/config/rdma_cm/$dev; echo 106 > /sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_tos; done
for role in roce_rp roce_np; do f=/sys/class/net/ens1f0np0/ecn/$role/enable/3; [ -e $f ] && echo 1 > $f; done; true

# ens1f1np1 -> leaf04 Ethernet2/1
ip link set dev ens1f1np1 mtu 9000
dcb pfc set dev ens1f1np1 prio-pfc all:off 3:on
dcb app add dev ens1f1np1 dscp-prio 26:3 48:6
for d in /sys/class/net/ens1f1np1/device/infiniband/*; do dev=${d##*/}; mkdir -p /sys/kernel/config/rdma_cm/$dev; echo 106 > /sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_tos; done
for role in roce_rp roce_np; do f=/sys/class/net/ens1f1np1/ecn/$role/enable/3; [ -e $f ] && echo 1 > $f; done; true

# NCCL jobs (pod environment):
#   NCCL_IB_TC=106
