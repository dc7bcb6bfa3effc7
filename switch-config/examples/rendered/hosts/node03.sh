#!/bin/sh
# node03 RoCE host profile: rendered by spinelctl from fabric intent gpu-a (spinel.dev/fabric-intent/v1).
# Change the intent and render again rather than editing this file.
set -eu
# ens1f0np0 -> leaf03 Ethernet1/1
# ens1f1np1 -> leaf04 Ethernet1/1
for nic in ens1f0np0 ens1f1np1; do
  ip link set dev $nic mtu 9000
  dcb pfc set dev $nic prio-pfc all:off 3:on
  dcb app add dev $nic dscp-prio 26:3 48:6
  for d in /sys/class/net/$nic/device/infiniband/*; do [ -d "$d" ] || continue; dev=${d##*/}; mkdir -p /sys/kernel/config/rdma_cm/$dev && echo 106 > /sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_tos; done
  for role in roce_rp roce_np; do f=/sys/class/net/$nic/ecn/$role/enable/3; [ -e $f ] && echo 1 > $f; done; true
done

# NCCL jobs (pod environment):
#   NCCL_IB_TC=106
