//! The DRA kubelet plugin: registration with the kubelet's plugin watcher (a socket in its
//! `plugins_registry` serving `Registration`), and the `DRAPlugin` service on the plugin's own
//! socket. `NodePrepareResources` reads each claim's allocation, keeps the devices of this
//! driver on this node, records them and writes their CDI spec ([`super::prepared`]);
//! `NodeUnprepareResources` undoes that. Both are idempotent: the kubelet retries, and a
//! claim already prepared is answered from its record without asking the API server.
//!
//! The interface itself is not moved here: the attach path stays the CNI's (Multus in DRA
//! mode hands `spinel` the VF from the claim), with its journal and every RoCE step.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::resource::v1::{Device, ResourceClaim};
use kube::Api;
use spinel_api::dra;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use super::kubelet_api::DRA_SERVICE_V1;
use super::kubelet_api::dra_v1::dra_plugin_server::{DraPlugin, DraPluginServer};
use super::kubelet_api::dra_v1::{
    self, NodePrepareResourceResponse, NodePrepareResourcesRequest, NodePrepareResourcesResponse,
    NodeUnprepareResourceResponse, NodeUnprepareResourcesRequest, NodeUnprepareResourcesResponse,
};
use super::prepared::{self, Journal, PreparedClaim, PreparedDevice};
use super::settings::KubeletPlugin;
use crate::kubelet_plugin::{PluginKind, PluginSocketError, Registration, SocketServer};

/// Why the plugin cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A socket cannot be made.
    #[error(transparent)]
    Socket(#[from] PluginSocketError),
}

/// What preparing needs.
pub struct Plugin {
    /// This node (the pool).
    pub node: String,
    /// The API client (claims are read in their namespaces).
    pub client: kube::Client,
    /// The devices the node publishes (the publisher keeps it current).
    pub devices: watch::Receiver<Vec<Device>>,
    /// The journal and CDI directory.
    pub journal: Journal,
    /// sysfs, for the RDMA character devices.
    pub sysfs_root: PathBuf,
}

impl Plugin {
    /// Prepares one claim; its response (an error inside it when it cannot be prepared).
    async fn prepare(&self, claim: &dra_v1::Claim) -> NodePrepareResourceResponse {
        match self.prepare_claim(claim).await {
            Ok(prepared) => NodePrepareResourceResponse {
                devices: prepared
                    .devices
                    .iter()
                    .map(|d| dra_v1::Device {
                        request_names: d.requests.clone(),
                        pool_name: d.pool.clone(),
                        device_name: d.device.clone(),
                        cdi_device_ids: d.cdi_id.iter().cloned().collect(),
                        share_id: None,
                    })
                    .collect(),
                error: String::new(),
            },
            Err(error) => {
                tracing::warn!(claim = %format!("{}/{}", claim.namespace, claim.name), uid = %claim.uid, "NodePrepareResources: {error}");
                NodePrepareResourceResponse {
                    devices: Vec::new(),
                    error,
                }
            }
        }
    }

    async fn prepare_claim(&self, claim: &dra_v1::Claim) -> Result<PreparedClaim, String> {
        if let Some(done) = self.journal.get(&claim.uid).map_err(|e| e.to_string())? {
            // Prepared before (a retry, or the agent restarted): the same answer, and the
            // CDI spec made whole again in case the crash came before it was written.
            self.journal.write_cdi(&done).map_err(|e| e.to_string())?;
            return Ok(done);
        }
        let object = self
            .claims_in(&claim.namespace)
            .get(&claim.name)
            .await
            .map_err(|e| {
                format!(
                    "cannot read ResourceClaim {}/{}: {e}",
                    claim.namespace, claim.name
                )
            })?;
        if object.metadata.uid.as_deref() != Some(claim.uid.as_str()) {
            return Err(format!(
                "ResourceClaim {}/{} has UID {:?}, not {}: it was replaced",
                claim.namespace, claim.name, object.metadata.uid, claim.uid
            ));
        }
        let results = object
            .status
            .and_then(|s| s.allocation)
            .and_then(|a| a.devices)
            .and_then(|d| d.results)
            .unwrap_or_default();
        let published: BTreeMap<String, Device> = self
            .devices
            .borrow()
            .iter()
            .map(|d| (d.name.clone(), d.clone()))
            .collect();
        let mut devices: Vec<PreparedDevice> = Vec::new();
        for r in results
            .iter()
            .filter(|r| r.driver == dra::DRIVER && r.pool == self.node)
        {
            let device = published.get(&r.device).ok_or_else(|| {
                format!(
                    "device {} is not one this node publishes (any more)",
                    r.device
                )
            })?;
            devices.push(self.device(&claim.uid, &r.request, &r.pool, device)?);
        }
        if devices.is_empty() {
            return Err(format!(
                "ResourceClaim {}/{} has no device of {} allocated on node {}",
                claim.namespace,
                claim.name,
                dra::DRIVER,
                self.node
            ));
        }
        let prepared = PreparedClaim {
            schema: prepared::SCHEMA,
            namespace: claim.namespace.clone(),
            name: claim.name.clone(),
            uid: claim.uid.clone(),
            devices,
        };
        self.journal.prepare(&prepared).map_err(|e| e.to_string())?;
        tracing::info!(claim = %format!("{}/{}", claim.namespace, claim.name), devices = prepared.devices.len(), "prepared");
        Ok(prepared)
    }

    fn device(
        &self,
        uid: &str,
        request: &str,
        pool: &str,
        d: &Device,
    ) -> Result<PreparedDevice, String> {
        let attr = |k: &str| d.attributes.as_ref()?.get(k)?.string.clone();
        let rdma = attr(dra::ATTR_RDMA_DEVICE);
        let mut nodes = Vec::new();
        if let Some(rdma) = &rdma {
            let uverbs = prepared::uverbs_of(&self.sysfs_root, rdma).ok_or_else(|| {
                format!(
                    "{}: RDMA device {rdma} has no uverbs character device (is ib_uverbs loaded?)",
                    d.name
                )
            })?;
            nodes = vec![uverbs, "/dev/infiniband/rdma_cm".to_owned()];
        }
        Ok(PreparedDevice {
            requests: vec![request.to_owned()],
            pool: pool.to_owned(),
            device: d.name.clone(),
            pci: attr(dra::ATTR_PCI_ADDRESS),
            rdma_device: rdma,
            cdi_id: (!nodes.is_empty())
                .then(|| format!("{}={uid}-{}", prepared::cdi_kind(), d.name)),
            device_nodes: nodes,
        })
    }

    fn claims_in(&self, namespace: &str) -> Api<ResourceClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// The `DRAPlugin` service.
struct Service(Arc<Plugin>);

#[tonic::async_trait]
impl DraPlugin for Service {
    async fn node_prepare_resources(
        &self,
        request: Request<NodePrepareResourcesRequest>,
    ) -> Result<Response<NodePrepareResourcesResponse>, Status> {
        let mut claims = std::collections::HashMap::new();
        for c in request.into_inner().claims {
            let answer = self.0.prepare(&c).await;
            claims.insert(c.uid.clone(), answer);
        }
        Ok(Response::new(NodePrepareResourcesResponse { claims }))
    }

    async fn node_unprepare_resources(
        &self,
        request: Request<NodeUnprepareResourcesRequest>,
    ) -> Result<Response<NodeUnprepareResourcesResponse>, Status> {
        let mut claims = std::collections::HashMap::new();
        for c in request.into_inner().claims {
            let error = match self.0.journal.unprepare(&c.uid) {
                Ok(()) => {
                    tracing::info!(claim = %format!("{}/{}", c.namespace, c.name), "unprepared");
                    String::new()
                }
                Err(e) => e.to_string(),
            };
            claims.insert(c.uid.clone(), NodeUnprepareResourceResponse { error });
        }
        Ok(Response::new(NodeUnprepareResourcesResponse { claims }))
    }
}

/// The plugin's socket and its registration socket.
///
/// The registration socket's name ends in `@reg.sock` on purpose. The kubelet's plugin watcher
/// dials it by its bare path, so grpc-go sends the percent-encoded path as `:authority`
/// (`%2Fvar%2Flib%2F...`), and h2 (under tonic) refuses a `%` in a host with PROTOCOL_ERROR:
/// registration would fail against every real kubelet. After the last `@` the URI grammar
/// reads the `%`s as userinfo and the host is `reg.sock`, which h2 accepts. (The kubelet
/// dials the DRA service itself as `unix:<path>`, whose authority is `localhost`.)
pub fn sockets(settings: &KubeletPlugin) -> (PathBuf, PathBuf) {
    (
        settings.dir.join("dra.sock"),
        crate::kubelet_plugin::registration_socket(&settings.registry, dra::DRIVER),
    )
}

/// Serves the plugin, then registers it (the registration socket appears once the service
/// answers); runs until the task is aborted.
pub async fn serve(plugin: Plugin, settings: KubeletPlugin) -> Result<(), PluginError> {
    let removed = plugin.journal.sweep();
    if !removed.is_empty() {
        tracing::warn!(?removed, "removed CDI specs no prepared claim explains");
    }
    let (endpoint, registration) = sockets(&settings);
    let mut dra = SocketServer::serve(
        &endpoint,
        tonic::transport::Server::builder()
            .add_service(DraPluginServer::new(Service(Arc::new(plugin)))),
    )?;
    let registrar = Registration::new(
        PluginKind::DraPlugin,
        dra::DRIVER,
        &endpoint,
        &[DRA_SERVICE_V1],
    );
    let mut reg = SocketServer::serve(
        &registration,
        tonic::transport::Server::builder().add_service(registrar.service()),
    )?;
    tracing::info!(socket = %registration.display(), "DRA kubelet plugin serving");
    let result = tokio::try_join!(dra.wait(), reg.wait());
    if let Err(e) = result {
        tracing::error!("the DRA kubelet plugin stopped: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use tonic::codegen::http::uri::Authority;

    /// grpc-go's `:authority` for a target that is a bare path: every byte outside RFC 3986's
    /// unreserved, sub-delims and `:[]@` percent-encoded (`encodeAuthority` in clientconn.go).
    fn grpc_go_authority(path: &Path) -> String {
        path.to_string_lossy()
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]@".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    }

    #[test]
    fn the_kubelet_s_authority_for_the_registration_socket_is_one_h2_accepts() {
        let settings = KubeletPlugin {
            registry: PathBuf::from("/var/lib/kubelet/plugins_registry"),
            dir: PathBuf::from("/var/lib/kubelet/plugins/roce.spinel.dev"),
            cdi_dir: PathBuf::from("/var/run/cdi"),
            state_dir: PathBuf::from("/var/lib/spinel/dra"),
        };
        let (_, registration) = sockets(&settings);
        let authority = grpc_go_authority(&registration);
        assert!(authority.starts_with("%2Fvar%2Flib"), "{authority}");
        let parsed: Authority = authority.parse().unwrap();
        assert_eq!(parsed.host(), "reg.sock");
        // The conventional name would be refused, which is why it is not used.
        let plain = grpc_go_authority(&settings.registry.join("roce.spinel.dev-reg.sock"));
        assert!(plain.parse::<Authority>().is_err());
    }
}
