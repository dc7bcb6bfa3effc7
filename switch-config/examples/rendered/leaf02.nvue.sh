# leaf02 (Cumulus Linux 5.12 NVUE): rendered by spinelctl from fabric intent gpu-a (spinel.dev/fabric-intent/v1).
# Change the intent and render again rather than editing this file.
nv set qos roce mode lossless
nv set qos mapping default-global trust l3
nv set qos mapping default-global dscp 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25 switch-priority 0
nv set qos mapping default-global dscp 26 switch-priority 3
nv set qos mapping default-global dscp 27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47 switch-priority 0
nv set qos mapping default-global dscp 48 switch-priority 6
nv set qos mapping default-global dscp 49,50,51,52,53,54,55,56,57,58,59,60,61,62,63 switch-priority 0
nv set qos egress-queue-mapping default-global switch-priority 0,1,2 traffic-class 0
nv set qos egress-queue-mapping default-global switch-priority 3 traffic-class 3
nv set qos egress-queue-mapping default-global switch-priority 4,5 traffic-class 0
nv set qos egress-queue-mapping default-global switch-priority 6 traffic-class 6
nv set qos egress-queue-mapping default-global switch-priority 7 traffic-class 0
nv set qos egress-scheduler default-global traffic-class 0 mode dwrr
nv set qos egress-scheduler default-global traffic-class 0 bw-percent 50
nv set qos egress-scheduler default-global traffic-class 3 mode dwrr
nv set qos egress-scheduler default-global traffic-class 3 bw-percent 50
nv set qos egress-scheduler default-global traffic-class 6 mode strict
nv set qos pfc default-global switch-priority 3
nv set qos pfc default-global cable-length 5
nv set qos pfc default-global rx enable
nv set qos pfc default-global tx enable
nv set qos pfc roce-uplink switch-priority 3
nv set qos pfc roce-uplink cable-length 40
nv set qos pfc roce-uplink rx enable
nv set qos pfc roce-uplink tx enable
nv set qos traffic-pool roce-lossless switch-priority 3
nv set qos congestion-control default-global traffic-class 3 ecn enable
nv set qos congestion-control default-global traffic-class 3 max-threshold 1500000
nv set qos congestion-control default-global traffic-class 3 min-threshold 150000
nv set qos congestion-control default-global traffic-class 3 probability 100
nv set qos congestion-control default-global traffic-class 3 red disable
nv set qos pfc-watchdog polling-interval 200
nv set qos pfc-watchdog robustness 1
nv set service lldp application-tlv udp-port 4791 priority 3
nv set bridge domain br_default vlan 101
nv set interface swp1 type swp
nv set interface swp1 description node01/ens1f1np1
nv set interface swp1 link mtu 9100
nv set interface swp1 link speed 400G
nv set interface swp1 bridge domain br_default access 101
nv set interface swp1 lldp application-tlv udp-port 4791
nv set interface swp1 lldp dcbx-ets-config-tlv on
nv set interface swp1 lldp dcbx-pfc-tlv on
nv set interface swp1 qos pfc-watchdog state enable
nv set interface swp2 type swp
nv set interface swp2 description node02/ens1f1np1
nv set interface swp2 link mtu 9100
nv set interface swp2 link speed 400G
nv set interface swp2 bridge domain br_default access 101
nv set interface swp2 lldp application-tlv udp-port 4791
nv set interface swp2 lldp dcbx-ets-config-tlv on
nv set interface swp2 lldp dcbx-pfc-tlv on
nv set interface swp2 qos pfc-watchdog state enable
nv set interface swp51 type swp
nv set interface swp51 description spine01/Ethernet8
nv set interface swp51 link mtu 9100
nv set interface swp51 link speed 400G
nv set interface swp51 ip address 10.254.0.4/31
nv set interface swp51 qos pfc profile roce-uplink
nv set interface swp51 lldp dcbx-ets-config-tlv on
nv set interface swp51 lldp dcbx-pfc-tlv on
nv set interface swp51 qos pfc-watchdog state enable
nv set interface swp52 type swp
nv set interface swp52 description spine02/Ethernet1/2
nv set interface swp52 link mtu 9100
nv set interface swp52 link speed 400G
nv set interface swp52 ip address 10.254.0.6/31
nv set interface swp52 qos pfc profile roce-uplink
nv set interface swp52 lldp dcbx-ets-config-tlv on
nv set interface swp52 lldp dcbx-pfc-tlv on
nv set interface swp52 qos pfc-watchdog state enable
nv set interface vlan101 type svi
nv set interface vlan101 vlan 101
nv set interface vlan101 base-interface br_default
nv set interface vlan101 ip address 10.0.1.1/24
nv set interface vlan101 link mtu 9100
nv set system global arp base-reachable-time 1500
nv unset qos congestion-control default-global traffic-class 0
nv config apply
