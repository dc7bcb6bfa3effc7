//! What every kubelet plugin the agent serves shares (its device plugin, its DRA driver's
//! kubelet plugin): gRPC on a unix socket, and the kubelet's plugin watcher registration.
//!
//! The kubelet's plugin manager watches `/var/lib/kubelet/plugins_registry`; for each socket
//! that appears it calls `GetInfo` (the plugin's kind, name, endpoint and API versions), hands
//! the plugin to the manager of that kind (device manager, DRA manager, CSI), and reports the
//! outcome with `NotifyRegistrationStatus`. A kubelet that restarts walks the directory again,
//! so a plugin whose socket stays in place is registered again without doing anything; a socket
//! that disappears unregisters it. The APIs are the kubelet's own protos
//! (proto/k8s.io/kubelet, compiled by build.rs).

use std::io;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::UnixListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tonic::{Request, Response, Status};

/// The generated messages and services.
#[allow(missing_docs, clippy::all, clippy::pedantic, unreachable_pub)]
pub mod proto {
    /// `k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1`. (The DRA service is
    /// [`crate::dra::kubelet_api`].)
    pub mod deviceplugin {
        tonic::include_proto!("v1beta1");
    }
    /// `k8s.io/kubelet/pkg/apis/pluginregistration/v1` (protobuf package `pluginregistration`).
    pub mod pluginregistration {
        tonic::include_proto!("pluginregistration");
    }
}

use proto::pluginregistration::registration_server::{self, RegistrationServer};
use proto::pluginregistration::{
    InfoRequest, PluginInfo, RegistrationStatus, RegistrationStatusResponse,
};

/// Where the kubelet's plugin watcher looks for registration sockets.
pub const PLUGINS_REGISTRY: &str = "/var/lib/kubelet/plugins_registry";

/// The registration socket of plugin `name` in the kubelet's plugin registry `registry`:
/// `<name>@reg.sock`. The `@` is needed. The plugin watcher dials the socket by its bare path,
/// so grpc-go sends the percent-encoded path (`%2Fvar%2Flib%2F...`) as `:authority`, and h2
/// (under tonic) refuses a `%` in a host with PROTOCOL_ERROR: registration would fail with
/// every real kubelet. After the last `@` the URI grammar reads the `%`s as userinfo and the
/// host is `reg.sock`, which h2 accepts. (The device and DRA managers dial their plugins with
/// `localhost` as authority; only the watcher's `GetInfo` needs this.)
pub fn registration_socket(registry: &Path, name: &str) -> PathBuf {
    registry.join(format!("{}@reg.sock", name.replace('/', "-")))
}

/// A socket cannot be served or reached.
#[derive(Debug, thiserror::Error)]
pub enum PluginSocketError {
    /// The socket's directory cannot be created, a stale socket cannot be removed, or the
    /// socket cannot be bound.
    #[error("cannot listen on {path}")]
    Listen {
        /// The socket.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Something other than a socket is in the way.
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// A client cannot connect.
    #[error("cannot connect to {path}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        #[source]
        source: tonic::transport::Error,
    },
}

/// The kind of plugin, as the kubelet's plugin watcher names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginKind {
    /// A device plugin (`k8s.io/kubelet/pkg/apis/deviceplugin`).
    DevicePlugin,
    /// A dynamic resource allocation driver (`k8s.io/kubelet/pkg/apis/dra`).
    DraPlugin,
}

impl PluginKind {
    /// The watcher's name for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::DevicePlugin => "DevicePlugin",
            Self::DraPlugin => "DRAPlugin",
        }
    }
}

/// What the kubelet last said about the registration: `None` before it said anything,
/// `Some(Ok(()))` when registered, `Some(Err(refusal))` when it refused the plugin.
pub type RegistrationState = Option<Result<(), Refused>>;

/// The kubelet refused a plugin's registration, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the kubelet refused the plugin: {0}")]
pub struct Refused(pub String);

/// The plugin watcher's `Registration` service for one plugin.
#[derive(Debug, Clone)]
pub struct Registration {
    info: PluginInfo,
    state: Arc<watch::Sender<RegistrationState>>,
}

impl Registration {
    /// Registration of plugin `name` of `kind`, served at `endpoint` (a socket path the
    /// kubelet dials), speaking the API `versions`.
    pub fn new(kind: PluginKind, name: &str, endpoint: &Path, versions: &[&str]) -> Self {
        Self {
            info: PluginInfo {
                r#type: kind.as_str().to_owned(),
                name: name.to_owned(),
                endpoint: endpoint.display().to_string(),
                supported_versions: versions.iter().map(|v| (*v).to_owned()).collect(),
            },
            state: Arc::new(watch::channel(None).0),
        }
    }

    /// What the kubelet said about the registration, as it changes.
    pub fn state(&self) -> watch::Receiver<RegistrationState> {
        self.state.subscribe()
    }

    /// The service, to add to a server.
    pub fn service(self) -> RegistrationServer<Self> {
        RegistrationServer::new(self)
    }
}

#[tonic::async_trait]
impl registration_server::Registration for Registration {
    async fn get_info(
        &self,
        _request: Request<InfoRequest>,
    ) -> Result<Response<PluginInfo>, Status> {
        Ok(Response::new(self.info.clone()))
    }

    async fn notify_registration_status(
        &self,
        request: Request<RegistrationStatus>,
    ) -> Result<Response<RegistrationStatusResponse>, Status> {
        let status = request.into_inner();
        let state = if status.plugin_registered {
            tracing::info!(plugin = %self.info.name, "registered with the kubelet");
            Ok(())
        } else {
            tracing::error!(plugin = %self.info.name, reason = %status.error,
                "the kubelet refused the plugin");
            Err(Refused(status.error))
        };
        self.state.send_replace(Some(state));
        Ok(Response::new(RegistrationStatusResponse {}))
    }
}

/// Binds a unix socket at `path`: creates its directory, replaces a stale socket left by an
/// earlier run (never anything that is not a socket).
pub fn bind(path: &Path) -> Result<UnixListener, PluginSocketError> {
    let listen = |source| PluginSocketError::Listen {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(listen)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path).map_err(listen)?,
        Ok(_) => {
            return Err(PluginSocketError::NotASocket {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(listen(e)),
    }
    UnixListener::bind(path).map_err(listen)
}

/// How long [`SocketServer::stop`] lets calls in flight finish.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// A gRPC server on a unix socket. Stopping it (or dropping it) stops serving; [`Self::stop`]
/// also removes the socket, which unregisters a plugin from the kubelet.
#[derive(Debug)]
pub struct SocketServer {
    path: PathBuf,
    inode: Option<u64>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl SocketServer {
    /// Serves `router` on a socket bound with [`bind`] at `path`.
    pub fn serve(
        path: &Path,
        router: tonic::transport::server::Router,
    ) -> Result<Self, PluginSocketError> {
        let listener = bind(path)?;
        let inode = inode_of(path);
        let (stop, stopped) = oneshot::channel::<()>();
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        let task = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            path: path.to_owned(),
            inode,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Serves until the server fails (or forever); the socket stays.
    pub async fn wait(&mut self) -> Result<(), tonic::transport::Error> {
        match self.task.as_mut() {
            Some(task) => {
                let result = task.await;
                self.task = None;
                match result {
                    Ok(served) => served,
                    Err(e) => {
                        tracing::warn!(socket = %self.path.display(), "gRPC server task: {e}");
                        Ok(())
                    }
                }
            }
            None => Ok(()),
        }
    }

    /// The socket.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the socket this server bound is still in place (someone may have removed or
    /// replaced it, which unregisters the plugin).
    pub fn socket_in_place(&self) -> bool {
        self.inode.is_some() && inode_of(&self.path) == self.inode
    }

    /// Stops serving and removes the socket if it is still this server's. Calls in flight get
    /// [`STOP_GRACE`] to finish (a stream the client keeps open, such as the kubelet's
    /// `ListAndWatch`, never does), then the server is aborted.
    pub async fn stop(mut self) {
        let in_place = self.socket_in_place();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take() {
            match tokio::time::timeout(STOP_GRACE, &mut task).await {
                Ok(Ok(Err(e))) => {
                    tracing::warn!(socket = %self.path.display(), "gRPC server: {e}");
                }
                Ok(Err(e)) => {
                    tracing::warn!(socket = %self.path.display(), "gRPC server task: {e}")
                }
                Ok(Ok(Ok(()))) => {}
                Err(_) => task.abort(),
            }
        }
        if in_place {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn inode_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).ok().map(|m| m.ino())
}

/// A gRPC channel to the unix socket at `path` (how the kubelet reaches a plugin, and a test
/// reaches it as the kubelet would).
pub async fn connect(path: &Path) -> Result<tonic::transport::Channel, PluginSocketError> {
    let socket = path.to_owned();
    // The URI is required by the API and unused: the connector decides where to connect.
    tonic::transport::Endpoint::from_static("http://[::1]:0")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|source| PluginSocketError::Connect {
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::proto::pluginregistration::registration_client::RegistrationClient;
    use super::*;

    #[tokio::test]
    async fn the_watcher_learns_the_plugin_and_its_verdict_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("registry/spinel.sock");
        let registration = Registration::new(
            PluginKind::DevicePlugin,
            "spinel.dev/rail0",
            &socket,
            &["v1beta1"],
        );
        let mut state = registration.state();
        let router = tonic::transport::Server::builder().add_service(registration.service());
        let server = SocketServer::serve(&socket, router).unwrap();
        assert!(server.socket_in_place());
        let mut client = RegistrationClient::new(connect(&socket).await.unwrap());
        let info = client.get_info(InfoRequest {}).await.unwrap().into_inner();
        assert_eq!(info.r#type, "DevicePlugin");
        assert_eq!(info.name, "spinel.dev/rail0");
        assert_eq!(info.endpoint, socket.display().to_string());
        assert_eq!(info.supported_versions, ["v1beta1"]);
        assert_eq!(*state.borrow_and_update(), None);
        client
            .notify_registration_status(RegistrationStatus {
                plugin_registered: false,
                error: "resource name taken".into(),
            })
            .await
            .unwrap();
        state.changed().await.unwrap();
        assert_eq!(
            *state.borrow_and_update(),
            Some(Err(Refused("resource name taken".into())))
        );
        server.stop().await;
        assert!(!socket.exists(), "stopping removes the socket");
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced_and_anything_else_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("a.sock");
        drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
        assert!(socket.exists(), "a stale socket from an earlier run");
        let listener = bind(&socket).unwrap();
        drop(listener);
        let file = dir.path().join("not-a-socket");
        std::fs::write(&file, "data").unwrap();
        assert!(matches!(
            bind(&file),
            Err(PluginSocketError::NotASocket { .. })
        ));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "data");
    }

    #[tokio::test]
    async fn a_removed_socket_is_noticed_and_not_removed_twice() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("p.sock");
        let router = tonic::transport::Server::builder().add_service(
            Registration::new(PluginKind::DraPlugin, "x.example.com", &socket, &["v1"]).service(),
        );
        let server = SocketServer::serve(&socket, router).unwrap();
        std::fs::remove_file(&socket).unwrap();
        assert!(!server.socket_in_place());
        // Another server took the path meanwhile: stopping the first leaves it.
        let other = bind(&socket).unwrap();
        server.stop().await;
        assert!(socket.exists(), "the newer socket stays");
        drop(other);
    }
}
