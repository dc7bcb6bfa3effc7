//! Spinel's device plugin: every rail's VFs as an extended resource (`spinel.dev/rail0`, ...),
//! the role the SR-IOV network device plugin plays in front of sriov-cni. A pod asks for
//! `spinel.dev/rail0: 1`; the kubelet picks a VF and calls `Allocate`, which writes the VF's
//! device-info file where Multus reads it (the SR-IOV device plugin's path and format) and
//! gives the container `PCIDEVICE_SPINEL_DEV_RAIL0` and the VF's RDMA character devices.
//! Multus learns the allocation from the kubelet's pod-resources API and hands the VF's PCI
//! address to `spinel` as `deviceID`.
//!
//! One plugin per resource, each on its own socket in the kubelet's plugin registry
//! (`/var/lib/kubelet/plugins_registry`, see [`crate::kubelet_plugin`]), serving both the
//! watcher's registration and the device plugin API. The VFs are read from sysfs every
//! `rescan` (a PF that appears, disappears or changes its VF count shows in `ListAndWatch`);
//! a socket someone removed is put back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use hostnet::ifname::IfName;
use hostnet::sriov::{PciAddress, Sysfs};
use spinel_kube::shutdown::Shutdown;
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status};

use crate::kubelet_plugin::proto::deviceplugin::device_plugin_server::{
    DevicePlugin, DevicePluginServer,
};
use crate::kubelet_plugin::proto::deviceplugin::{
    AllocateRequest, AllocateResponse, ContainerAllocateResponse, Device, DevicePluginOptions,
    DeviceSpec, Empty, ListAndWatchResponse, NumaNode, PreStartContainerRequest,
    PreStartContainerResponse, PreferredAllocationRequest, PreferredAllocationResponse,
    TopologyInfo,
};
use crate::kubelet_plugin::{PluginKind, PluginSocketError, Registration, SocketServer};

/// The device plugin API version served.
pub const API_VERSION: &str = "v1beta1";
/// Where the SR-IOV device plugin writes device-info files and Multus reads them.
pub const DEVICE_INFO_DIR: &str = "/var/run/k8s.cni.cncf.io/devinfo/dp";

/// What the device plugin serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePluginConfig {
    /// One resource per rail.
    pub resources: Vec<RailResource>,
    /// The kubelet's plugin registry (sockets go there).
    pub registry_dir: PathBuf,
    /// Where device-info files are written at `Allocate`.
    pub device_info_dir: PathBuf,
    /// Where the RDMA character devices are (`/dev`).
    pub dev_dir: PathBuf,
    /// How often sysfs is read again.
    pub rescan: Duration,
}

/// One extended resource: the VFs of these PFs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailResource {
    /// The full resource name, `prefix/name` (e.g. `spinel.dev/rail0`).
    pub name: String,
    /// The PFs whose VFs it hands out.
    pub pfs: Vec<IfName>,
}

impl RailResource {
    /// The socket of its plugin in `registry_dir`.
    pub fn socket(&self, registry_dir: &Path) -> PathBuf {
        crate::kubelet_plugin::registration_socket(registry_dir, &self.name)
    }

    /// The environment variable naming the allocated VFs, as the SR-IOV device plugin names it
    /// (`PCIDEVICE_` and the resource name in capitals, `.` and `/` as `_`).
    pub fn env_name(&self) -> String {
        let upper: String = self
            .name
            .chars()
            .map(|c| match c {
                '.' | '/' | '-' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect();
        format!("PCIDEVICE_{upper}")
    }

    /// The device-info file Multus reads for VF `pci`.
    pub fn device_info_file(&self, dir: &Path, pci: &str) -> PathBuf {
        dir.join(format!("{}-{pci}-device.json", self.name.replace('/', "-")))
    }
}

/// Why the device plugin cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DevicePluginError {
    /// A plugin socket.
    #[error("device plugin {resource}")]
    Socket {
        /// The resource.
        resource: String,
        /// Why.
        #[source]
        source: PluginSocketError,
    },
}

/// One VF as the kubelet sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VfDevice {
    /// Its PCI address: the device ID.
    pub pci: PciAddress,
    /// Its RDMA devices (`mlx5_3`).
    pub rdma: Vec<String>,
    /// Its character devices under the device directory (`infiniband/uverbs3`), which the
    /// container gets.
    pub char_devices: Vec<String>,
    /// Its NUMA node, when the platform tells one.
    pub numa: Option<i64>,
}

/// The VFs of `pfs` as sysfs shows them now. A PF that is missing or not SR-IOV contributes
/// nothing and is logged: the resource then has fewer (or no) devices, as the kubelet sees.
pub fn scan(sysfs: &Sysfs, dev_dir: &Path, pfs: &[IfName]) -> Vec<VfDevice> {
    let mut out = Vec::new();
    for pf_name in pfs {
        let vfs = sysfs.pf(pf_name.as_str()).and_then(|pf| sysfs.vfs_of(&pf));
        let vfs = match vfs {
            Ok(vfs) => vfs,
            Err(e) => {
                tracing::warn!(pf = %pf_name, "no VFs to offer: {e}");
                continue;
            }
        };
        for (_, pci) in vfs {
            let dir = sysfs.root().join("bus/pci/devices").join(pci.as_str());
            let rdma = sysfs.rdma_devices_of(&pci).unwrap_or_default();
            // The uverbs node of each RDMA device, found as the DRA plugin finds it.
            let mut char_devices: Vec<String> = rdma
                .iter()
                .filter_map(|r| crate::dra::prepared::uverbs_of(sysfs.root(), r))
                .filter_map(|d| d.strip_prefix("/dev/").map(str::to_owned))
                .filter(|d| dev_dir.join(d).exists())
                .collect();
            if !rdma.is_empty() && dev_dir.join("infiniband/rdma_cm").exists() {
                char_devices.push("infiniband/rdma_cm".into());
            }
            let numa = std::fs::read_to_string(dir.join("numa_node"))
                .ok()
                .and_then(|n| n.trim().parse::<i64>().ok())
                .filter(|n| *n >= 0);
            out.push(VfDevice {
                pci,
                rdma,
                char_devices,
                numa,
            });
        }
    }
    out.sort_by(|a, b| a.pci.cmp(&b.pci));
    out.dedup_by(|a, b| a.pci == b.pci);
    out
}

/// The device plugin of one resource.
#[derive(Debug, Clone)]
pub struct RailPlugin {
    resource: RailResource,
    devices: watch::Receiver<Vec<VfDevice>>,
    device_info_dir: PathBuf,
    dev_dir: PathBuf,
}

impl RailPlugin {
    /// The plugin of `resource`, offering what `devices` holds.
    pub fn new(
        resource: RailResource,
        devices: watch::Receiver<Vec<VfDevice>>,
        device_info_dir: &Path,
        dev_dir: &Path,
    ) -> Self {
        Self {
            resource,
            devices,
            device_info_dir: device_info_dir.to_owned(),
            dev_dir: dev_dir.to_owned(),
        }
    }

    /// A server for its socket: the watcher's registration and the device plugin API.
    pub fn router(self, socket: &Path) -> tonic::transport::server::Router {
        let registration = Registration::new(
            PluginKind::DevicePlugin,
            &self.resource.name,
            socket,
            &[API_VERSION],
        );
        tonic::transport::Server::builder()
            .add_service(registration.service())
            .add_service(DevicePluginServer::new(self))
    }

    fn allocate_container(&self, ids: &[String]) -> Result<ContainerAllocateResponse, Status> {
        let devices = self.devices.borrow().clone();
        let mut envs = BTreeMap::new();
        let mut specs: Vec<DeviceSpec> = Vec::new();
        let mut pcis = Vec::new();
        for id in ids {
            let vf = devices
                .iter()
                .find(|d| d.pci.as_str() == id)
                .ok_or_else(|| {
                    Status::invalid_argument(format!("{} has no device {id:?}", self.resource.name))
                })?;
            self.write_device_info(vf)?;
            for dev in &vf.char_devices {
                let path = self.dev_dir.join(dev).display().to_string();
                if !specs.iter().any(|s| s.host_path == path) {
                    specs.push(DeviceSpec {
                        container_path: format!("/dev/{dev}"),
                        host_path: path,
                        permissions: "rw".into(),
                    });
                }
            }
            pcis.push(vf.pci.as_str().to_owned());
        }
        envs.insert(self.resource.env_name(), pcis.join(","));
        Ok(ContainerAllocateResponse {
            envs: envs.into_iter().collect(),
            devices: specs,
            ..ContainerAllocateResponse::default()
        })
    }

    /// Writes the VF's device-info file (spec 1.1.0, as the SR-IOV device plugin writes it),
    /// atomically, readable by all.
    fn write_device_info(&self, vf: &VfDevice) -> Result<(), Status> {
        let info = serde_json::json!({
            "type": "pci",
            "version": "1.1.0",
            "pci": {"pci-address": vf.pci.as_str(), "rdma-device": vf.rdma.join(",")},
        });
        let path = self
            .resource
            .device_info_file(&self.device_info_dir, vf.pci.as_str());
        let tmp = path.with_extension("json.tmp");
        let written = std::fs::create_dir_all(&self.device_info_dir)
            .and_then(|()| std::fs::write(&tmp, info.to_string()))
            .and_then(|()| std::fs::rename(&tmp, &path));
        written.map_err(|e| {
            Status::internal(format!(
                "write the device-info file {}: {e}",
                path.display()
            ))
        })
    }
}

fn list_and_watch_response(devices: &[VfDevice]) -> ListAndWatchResponse {
    ListAndWatchResponse {
        devices: devices
            .iter()
            .map(|d| Device {
                id: d.pci.as_str().to_owned(),
                health: "Healthy".into(),
                topology: d.numa.map(|id| TopologyInfo {
                    nodes: vec![NumaNode { id }],
                }),
            })
            .collect(),
    }
}

type ListAndWatchStream = Pin<Box<dyn Stream<Item = Result<ListAndWatchResponse, Status>> + Send>>;

#[tonic::async_trait]
impl DevicePlugin for RailPlugin {
    async fn get_device_plugin_options(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<DevicePluginOptions>, Status> {
        Ok(Response::new(DevicePluginOptions::default()))
    }

    type ListAndWatchStream = ListAndWatchStream;

    async fn list_and_watch(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListAndWatchStream>, Status> {
        let stream = tokio_stream::wrappers::WatchStream::new(self.devices.clone())
            .map(|devices| Ok(list_and_watch_response(&devices)));
        Ok(Response::new(Box::pin(stream)))
    }

    async fn get_preferred_allocation(
        &self,
        _request: Request<PreferredAllocationRequest>,
    ) -> Result<Response<PreferredAllocationResponse>, Status> {
        Err(Status::unimplemented(
            "no preferred allocation (the options say so)",
        ))
    }

    async fn allocate(
        &self,
        request: Request<AllocateRequest>,
    ) -> Result<Response<AllocateResponse>, Status> {
        let mut container_responses = Vec::new();
        for container in request.into_inner().container_requests {
            container_responses.push(self.allocate_container(&container.devices_ids)?);
        }
        tracing::info!(resource = %self.resource.name, containers = container_responses.len(),
            "allocated");
        Ok(Response::new(AllocateResponse {
            container_responses,
        }))
    }

    async fn pre_start_container(
        &self,
        _request: Request<PreStartContainerRequest>,
    ) -> Result<Response<PreStartContainerResponse>, Status> {
        Ok(Response::new(PreStartContainerResponse {}))
    }
}

/// Serves one plugin per resource until `shutdown`, reading sysfs at `sysfs_root` every
/// `config.rescan` and putting back a socket someone removed. On shutdown the sockets are
/// removed, which unregisters the resources.
pub async fn run(
    config: DevicePluginConfig,
    sysfs_root: PathBuf,
    shutdown: Shutdown,
) -> Result<(), DevicePluginError> {
    let sysfs = std::sync::Arc::new(Sysfs::new(sysfs_root));
    let mut plugins = Vec::new();
    for resource in &config.resources {
        let found = scan_blocking(&sysfs, &config.dev_dir, &resource.pfs).await;
        tracing::info!(resource = %resource.name, vfs = found.len(), "offering VFs");
        let (tx, rx) = watch::channel(found);
        let plugin = RailPlugin::new(
            resource.clone(),
            rx,
            &config.device_info_dir,
            &config.dev_dir,
        );
        let server = serve(&plugin, &config.registry_dir)?;
        plugins.push((plugin, tx, server));
    }
    let mut stopping = shutdown.receiver();
    loop {
        tokio::select! {
            _ = stopping.wait_for(|s| *s) => break,
            () = tokio::time::sleep(config.rescan) => {}
        }
        for (plugin, tx, server) in &mut plugins {
            let found = scan_blocking(&sysfs, &config.dev_dir, &plugin.resource.pfs).await;
            tx.send_if_modified(|current| {
                let changed = *current != found;
                if changed {
                    tracing::info!(resource = %plugin.resource.name, vfs = found.len(),
                        "VFs changed");
                    *current = found;
                }
                changed
            });
            if !server.socket_in_place() {
                tracing::warn!(resource = %plugin.resource.name, "socket removed; serving again");
                *server = serve(plugin, &config.registry_dir)?;
            }
        }
    }
    for (_, devices, server) in plugins {
        // The kubelet's ListAndWatch streams end with their sender.
        drop(devices);
        server.stop().await;
    }
    Ok(())
}

fn serve(plugin: &RailPlugin, registry_dir: &Path) -> Result<SocketServer, DevicePluginError> {
    let socket = plugin.resource.socket(registry_dir);
    SocketServer::serve(&socket, plugin.clone().router(&socket)).map_err(|source| {
        DevicePluginError::Socket {
            resource: plugin.resource.name.clone(),
            source,
        }
    })
}

/// [`scan`] on a blocking thread (sysfs reads are kernel work, never on a runtime worker).
async fn scan_blocking(
    sysfs: &std::sync::Arc<Sysfs>,
    dev_dir: &Path,
    pfs: &[IfName],
) -> Vec<VfDevice> {
    let (sysfs, dev_dir, pfs) = (sysfs.clone(), dev_dir.to_owned(), pfs.to_vec());
    tokio::task::spawn_blocking(move || scan(&sysfs, &dev_dir, &pfs))
        .await
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use hostnet::sriov::fake::FakeSysfs;

    use super::*;
    use crate::kubelet_plugin::connect;
    use crate::kubelet_plugin::proto::deviceplugin::ContainerAllocateRequest;
    use crate::kubelet_plugin::proto::deviceplugin::device_plugin_client::DevicePluginClient;
    use crate::kubelet_plugin::proto::pluginregistration::InfoRequest;
    use crate::kubelet_plugin::proto::pluginregistration::registration_client::RegistrationClient;

    const PF: &str = "0000:3b:00.0";

    fn rail0() -> RailResource {
        RailResource {
            name: "spinel.dev/rail0".into(),
            pfs: vec!["ens1f0np0".parse().unwrap()],
        }
    }

    /// A PF with `vfs` VFs, each with an RDMA device and a uverbs device; VF 0 on NUMA node 1.
    fn sysfs_with(dir: &Path, vfs: u32) -> FakeSysfs {
        let sysfs = FakeSysfs::at(dir.join("sys"));
        sysfs.add_pf(PF, "ens1f0np0", vfs, 8);
        for i in 0..vfs {
            let pci = format!("0000:3b:00.{}", i + 2);
            sysfs.add_vf(PF, i, &pci, Some(&format!("ens1f0v{i}")), "mlx5_core");
            sysfs.add_rdma(&pci, &format!("mlx5_{}", i + 2));
            let verbs = sysfs
                .root()
                .join(format!("class/infiniband_verbs/uverbs{}", i + 2));
            std::fs::create_dir_all(&verbs).unwrap();
            std::fs::write(verbs.join("ibdev"), format!("mlx5_{}\n", i + 2)).unwrap();
            let device = sysfs.root().join("bus/pci/devices").join(&pci);
            std::fs::write(
                device.join("numa_node"),
                if i == 0 { "1\n" } else { "-1\n" },
            )
            .unwrap();
            std::fs::create_dir_all(dir.join("dev/infiniband")).unwrap();
            std::fs::write(dir.join(format!("dev/infiniband/uverbs{}", i + 2)), "").unwrap();
        }
        std::fs::write(dir.join("dev/infiniband/rdma_cm"), "").unwrap();
        sysfs
    }

    #[test]
    fn a_rails_vfs_with_their_rdma_devices_and_numa_node() {
        let dir = tempfile::tempdir().unwrap();
        let fake = sysfs_with(dir.path(), 2);
        let found = scan(
            &Sysfs::new(fake.root()),
            &dir.path().join("dev"),
            &rail0().pfs,
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].pci.as_str(), "0000:3b:00.2");
        assert_eq!(found[0].rdma, ["mlx5_2"]);
        assert_eq!(
            found[0].char_devices,
            ["infiniband/uverbs2", "infiniband/rdma_cm"]
        );
        assert_eq!((found[0].numa, found[1].numa), (Some(1), None));
        let missing = scan(
            &Sysfs::new(fake.root()),
            &dir.path().join("dev"),
            &["ens9f0np0".parse().unwrap()],
        );
        assert!(missing.is_empty(), "a missing PF offers nothing");
        assert_eq!(rail0().env_name(), "PCIDEVICE_SPINEL_DEV_RAIL0");
    }

    #[tokio::test]
    async fn the_kubelet_sees_the_vfs_changes_and_allocates_with_the_device_info_file() {
        let dir = tempfile::tempdir().unwrap();
        let fake = sysfs_with(dir.path(), 2);
        let dev = dir.path().join("dev");
        let found = scan(&Sysfs::new(fake.root()), &dev, &rail0().pfs);
        let (tx, rx) = watch::channel(found);
        let info_dir = dir.path().join("devinfo/dp");
        let plugin = RailPlugin::new(rail0(), rx, &info_dir, &dev);
        let socket = rail0().socket(&dir.path().join("plugins_registry"));
        assert!(socket.ends_with("plugins_registry/spinel.dev-rail0@reg.sock"));
        let server = SocketServer::serve(&socket, plugin.router(&socket)).unwrap();
        let channel = connect(&socket).await.unwrap();

        let info = RegistrationClient::new(channel.clone())
            .get_info(InfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (info.r#type.as_str(), info.name.as_str()),
            ("DevicePlugin", "spinel.dev/rail0")
        );
        let mut kubelet = DevicePluginClient::new(channel);
        let mut watch = kubelet.list_and_watch(Empty {}).await.unwrap().into_inner();
        let first = watch.message().await.unwrap().unwrap();
        let ids: Vec<&str> = first.devices.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["0000:3b:00.2", "0000:3b:00.3"]);
        assert!(first.devices.iter().all(|d| d.health == "Healthy"));
        assert_eq!(
            first.devices[0].topology.as_ref().unwrap().nodes[0].id,
            1,
            "NUMA node"
        );

        // A third VF appears: the kubelet hears of it.
        let more = sysfs_with(&dir.path().join("more"), 3);
        let more_dev = dir.path().join("more/dev");
        tx.send_replace(scan(&Sysfs::new(more.root()), &more_dev, &rail0().pfs));
        let second = watch.message().await.unwrap().unwrap();
        assert_eq!(second.devices.len(), 3);

        let response = kubelet
            .allocate(AllocateRequest {
                container_requests: vec![ContainerAllocateRequest {
                    devices_ids: vec!["0000:3b:00.3".into()],
                }],
            })
            .await
            .unwrap()
            .into_inner();
        let container = &response.container_responses[0];
        assert_eq!(
            container
                .envs
                .get("PCIDEVICE_SPINEL_DEV_RAIL0")
                .map(String::as_str),
            Some("0000:3b:00.3")
        );
        let paths: Vec<&str> = container
            .devices
            .iter()
            .map(|d| d.container_path.as_str())
            .collect();
        assert_eq!(
            paths,
            ["/dev/infiniband/uverbs3", "/dev/infiniband/rdma_cm"]
        );
        let file = info_dir.join("spinel.dev-rail0-0000:3b:00.3-device.json");
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"type": "pci", "version": "1.1.0",
                "pci": {"pci-address": "0000:3b:00.3", "rdma-device": "mlx5_3"}})
        );

        let unknown = kubelet
            .allocate(AllocateRequest {
                container_requests: vec![ContainerAllocateRequest {
                    devices_ids: vec!["0000:99:00.1".into()],
                }],
            })
            .await;
        assert_eq!(
            unknown.unwrap_err().code(),
            tonic::Code::InvalidArgument,
            "a device that is not ours"
        );
        server.stop().await;
        assert!(!socket.exists());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn run_serves_every_rail_puts_back_a_removed_socket_and_leaves_on_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let fake = sysfs_with(dir.path(), 1);
        let registry = dir.path().join("plugins_registry");
        let config = DevicePluginConfig {
            resources: vec![
                rail0(),
                RailResource {
                    name: "spinel.dev/rail1".into(),
                    pfs: vec!["ens1f1np1".parse().unwrap()],
                },
            ],
            registry_dir: registry.clone(),
            device_info_dir: dir.path().join("devinfo/dp"),
            dev_dir: dir.path().join("dev"),
            rescan: Duration::from_millis(50),
        };
        let shutdown = Shutdown::manual();
        let task = tokio::spawn(run(config, fake.root().to_owned(), shutdown.clone()));
        let sockets = [
            registry.join("spinel.dev-rail0@reg.sock"),
            registry.join("spinel.dev-rail1@reg.sock"),
        ];
        let wait = |what: &'static str, done: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !done() {
                assert!(std::time::Instant::now() < deadline, "{what}");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        wait("both sockets", &|| sockets.iter().all(|s| s.exists()));
        std::fs::remove_file(&sockets[0]).unwrap();
        wait("rail0's socket back", &|| sockets[0].exists());
        let mut kubelet = DevicePluginClient::new(connect(&sockets[0]).await.unwrap());
        let mut watch = kubelet.list_and_watch(Empty {}).await.unwrap().into_inner();
        assert_eq!(watch.message().await.unwrap().unwrap().devices.len(), 1);
        // rail1's PF does not exist: the resource is served with no devices.
        let mut rail1 = DevicePluginClient::new(connect(&sockets[1]).await.unwrap());
        let mut watch1 = rail1.list_and_watch(Empty {}).await.unwrap().into_inner();
        assert!(watch1.message().await.unwrap().unwrap().devices.is_empty());
        shutdown.trigger();
        task.await.unwrap().unwrap();
        assert!(sockets.iter().all(|s| !s.exists()), "sockets removed");
    }
}
