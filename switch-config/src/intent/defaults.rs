//! Defaults: NVIDIA/Cumulus/Arista RoCE practice (research notes §5.1), never SONiC's `AZURE`
//! template (which puts DSCP 26 in a lossy class).

use super::{
    ArpPolicy, Buffer, CnpClass, DataClass, Ecn, HostQos, Mtu, Pfc, RoceProfile, Scheduler,
    Watchdog, WatchdogAction,
};

impl Default for RoceProfile {
    fn default() -> Self {
        Self {
            name: "ROCE".to_owned(),
            data: DataClass::default(),
            cnp: CnpClass::default(),
            pfc: Pfc::default(),
            ecn: Ecn::default(),
            scheduler: Scheduler::default(),
            buffer: Buffer::default(),
            mtu: Mtu::default(),
            host: HostQos::default(),
        }
    }
}

impl Default for DataClass {
    fn default() -> Self {
        Self {
            dscp: vec![26],
            priority: 3,
            traffic_class: None,
        }
    }
}

impl Default for CnpClass {
    fn default() -> Self {
        Self {
            dscp: 48,
            priority: 6,
            traffic_class: None,
        }
    }
}

impl Default for Pfc {
    fn default() -> Self {
        Self {
            priorities: vec![3],
            watchdog: Watchdog::default(),
        }
    }
}

impl Default for Watchdog {
    fn default() -> Self {
        // SONiC's and Dell's published RoCE values; Arista's default timeout is 0.2 s too.
        Self {
            detection_ms: 200,
            restoration_ms: 200,
            poll_ms: 200,
            action: WatchdogAction::Drop,
        }
    }
}

impl Default for Ecn {
    fn default() -> Self {
        // Cumulus `nv set qos roce` values.
        Self {
            min_bytes: 150_000,
            max_bytes: 1_500_000,
            mark_probability: 100,
        }
    }
}

impl Default for Scheduler {
    fn default() -> Self {
        Self {
            data_percent: 50,
            default_percent: 50,
        }
    }
}

impl Default for Buffer {
    fn default() -> Self {
        // SONiC's templates: 5 m server-facing, 40 m leaf-to-spine; two lossless PGs (3-4).
        Self {
            lossless_groups: 2,
            host_cable_m: 5,
            uplink_cable_m: 40,
            lossless_pool_percent: 50,
        }
    }
}

impl Default for Mtu {
    fn default() -> Self {
        // 9100 fits every NOS here (EOS tops out at 9214); 9000 on hosts, 4096-byte RoCE MTU.
        Self {
            switch: 9100,
            host: 9000,
            roce_payload: 4096,
        }
    }
}

impl Default for HostQos {
    fn default() -> Self {
        Self {
            roce_tos: None,
            ecn: true,
        }
    }
}

impl Default for ArpPolicy {
    fn default() -> Self {
        // Cumulus' 1080 s base-reachable time ages a silent entry out in 18-27 min; 1500 s is
        // the Arista RoCE guides' value, far below EOS's 4 h default.
        Self {
            aging_seconds: 1500,
            pods_per_host: 16,
            headroom_percent: 25,
        }
    }
}
