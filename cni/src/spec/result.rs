//! CNI results: one internal model, read from any supported version and written in the version
//! the runtime asked for.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::Version;

/// A CNI result (also a `prevResult`, or an IPAM plugin's answer).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct CniResult {
    /// Interfaces created or moved, in chain order.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    /// Addresses.
    #[serde(default)]
    pub ips: Vec<IpConfig>,
    /// Routes.
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    /// DNS settings, passed through.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub dns: Value,
}

/// One interface entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Interface {
    /// Interface name.
    pub name: String,
    /// MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// MTU (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Namespace path, for interfaces inside the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Socket path (1.1.0), for userspace interfaces.
    #[serde(
        rename = "socketPath",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_path: Option<String>,
    /// PCI address (1.1.0), for SR-IOV interfaces.
    #[serde(rename = "pciID", default, skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<String>,
    /// Keys this plugin does not interpret (from earlier plugins) or adds (RoCE details).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One address entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct IpConfig {
    /// Address with prefix length.
    pub address: IpNet,
    /// Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Index into `interfaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
}

/// One route entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct RouteConfig {
    /// Destination.
    pub dst: IpNet,
    /// Next hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// Route MTU (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Advertised MSS (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u32>,
    /// Metric (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// Routing table (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// Route scope (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u8>,
}

impl CniResult {
    /// Reads a result of any supported version.
    pub fn from_json(value: &Value) -> Result<Self, serde_json::Error> {
        CniResult::deserialize(value)
    }

    /// Writes the result as version `version` expects it.
    pub fn to_json(&self, version: Version) -> Value {
        let v11 = version >= Version::V1_1_0;
        let interfaces: Vec<Value> = self
            .interfaces
            .iter()
            .map(|i| {
                let mut m = Map::new();
                m.insert("name".into(), json!(i.name));
                if let Some(mac) = &i.mac {
                    m.insert("mac".into(), json!(mac));
                }
                if let Some(sandbox) = &i.sandbox {
                    m.insert("sandbox".into(), json!(sandbox));
                }
                if v11 {
                    if let Some(mtu) = i.mtu {
                        m.insert("mtu".into(), json!(mtu));
                    }
                    if let Some(p) = &i.socket_path {
                        m.insert("socketPath".into(), json!(p));
                    }
                    if let Some(p) = &i.pci_id {
                        m.insert("pciID".into(), json!(p));
                    }
                }
                for (k, v) in &i.extra {
                    m.entry(k.clone()).or_insert_with(|| v.clone());
                }
                Value::Object(m)
            })
            .collect();
        let ips: Vec<Value> = self
            .ips
            .iter()
            .map(|ip| {
                let mut m = Map::new();
                if version < Version::V1_0_0 {
                    let family = if ip.address.addr().is_ipv4() {
                        "4"
                    } else {
                        "6"
                    };
                    m.insert("version".into(), json!(family));
                }
                m.insert("address".into(), json!(ip.address.to_string()));
                if let Some(gw) = ip.gateway {
                    m.insert("gateway".into(), json!(gw.to_string()));
                }
                if let Some(i) = ip.interface {
                    m.insert("interface".into(), json!(i));
                }
                Value::Object(m)
            })
            .collect();
        let routes: Vec<Value> = self
            .routes
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("dst".into(), json!(r.dst.to_string()));
                if let Some(gw) = r.gw {
                    m.insert("gw".into(), json!(gw.to_string()));
                }
                if v11 {
                    for (key, value) in [
                        ("mtu", r.mtu.map(u64::from)),
                        ("advmss", r.advmss.map(u64::from)),
                        ("priority", r.priority.map(u64::from)),
                        ("table", r.table.map(u64::from)),
                        ("scope", r.scope.map(u64::from)),
                    ] {
                        if let Some(value) = value {
                            m.insert(key.into(), json!(value));
                        }
                    }
                }
                Value::Object(m)
            })
            .collect();
        let mut out = Map::new();
        out.insert("cniVersion".into(), json!(version.as_str()));
        if !interfaces.is_empty() || version >= Version::V1_0_0 {
            out.insert("interfaces".into(), Value::Array(interfaces));
        }
        if !ips.is_empty() {
            out.insert("ips".into(), Value::Array(ips));
        }
        if !routes.is_empty() {
            out.insert("routes".into(), Value::Array(routes));
        }
        if self.dns.as_object().is_some_and(|d| !d.is_empty()) {
            out.insert("dns".into(), self.dns.clone());
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CniResult {
        CniResult::from_json(&json!({
            "cniVersion": "1.1.0",
            "interfaces": [{"name": "net1", "mac": "02:00:00:00:00:01", "mtu": 9000, "sandbox": "/var/run/netns/p", "pciID": "0000:3b:00.2", "roce": {"gidIndex": 3}}],
            "ips": [{"address": "10.56.0.5/24", "gateway": "10.56.0.1", "interface": 0}],
            "routes": [{"dst": "10.0.0.0/8", "gw": "10.56.0.1", "table": 101, "priority": 5}],
            "dns": {"nameservers": ["10.96.0.10"]}
        }))
        .unwrap()
    }

    #[test]
    fn one_model_many_versions() {
        let r = sample();
        let v11 = r.to_json(Version::V1_1_0);
        assert_eq!(v11["interfaces"][0]["mtu"], 9000);
        assert_eq!(v11["interfaces"][0]["pciID"], "0000:3b:00.2");
        assert_eq!(v11["interfaces"][0]["roce"]["gidIndex"], 3);
        assert_eq!(v11["routes"][0]["table"], 101);
        let v10 = r.to_json(Version::V1_0_0);
        assert!(v10["interfaces"][0].get("mtu").is_none());
        assert!(v10["routes"][0].get("table").is_none());
        assert!(v10["ips"][0].get("version").is_none());
        let v04 = r.to_json(Version::V0_4_0);
        assert_eq!(v04["ips"][0]["version"], "4");
        assert_eq!(v04["cniVersion"], "0.4.0");
        assert_eq!(CniResult::from_json(&v11).unwrap(), r);
    }

    #[test]
    fn reads_an_ipam_answer() {
        let ipam = json!({"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.0.2/16", "gateway": "10.1.0.1"}], "routes": [{"dst": "0.0.0.0/0"}], "dns": {}});
        let r = CniResult::from_json(&ipam).unwrap();
        assert_eq!(r.ips[0].address.to_string(), "10.1.0.2/16");
        assert!(r.interfaces.is_empty());
    }
}
