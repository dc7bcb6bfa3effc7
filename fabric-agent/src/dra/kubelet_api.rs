//! The kubelet's gRPC APIs a DRA kubelet plugin serves, generated at build time from the
//! vendored `.proto` files (`fabric-agent/proto`, Kubernetes 1.36.4).

/// `k8s.io/kubelet/pkg/apis/dra/v1`: the `DRAPlugin` service.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod dra_v1 {
    tonic::include_proto!("k8s.io.kubelet.pkg.apis.dra.v1");
}

/// `k8s.io/kubelet/pkg/apis/pluginregistration/v1`: the `Registration` service (shared by
/// every kubelet plugin the agent serves).
pub use crate::kubelet_plugin::proto::pluginregistration as registration;

/// The `supported_versions` entry naming the v1 DRA service (`<proto package>.<service>` as
/// the kubelet's DRA plugin manager matches it).
pub const DRA_SERVICE_V1: &str = "v1.DRAPlugin";

/// The plugin type the kubelet's plugin watcher hands to its DRA handler.
pub const DRA_PLUGIN_TYPE: &str = crate::kubelet_plugin::PluginKind::DraPlugin.as_str();
