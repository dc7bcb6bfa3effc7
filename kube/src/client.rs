//! The API client: from `--kubeconfig` when given, else the pod's service account, else the
//! usual kubeconfig lookup (`KUBECONFIG`, `~/.kube/config`) for a daemon run by hand.

use std::path::{Path, PathBuf};

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig named cannot be read.
    #[error("cannot read kubeconfig {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// A kubeconfig was read but does not make a configuration.
    #[error("kubeconfig {path} is not usable")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither in a pod nor given a kubeconfig.
    #[error("not in a cluster and no kubeconfig found: pass --kubeconfig")]
    Infer(#[source] kube::config::InferConfigError),
    /// The configuration does not make a client (TLS, proxy).
    #[error("cannot build the API client")]
    Build(#[source] kube::Error),
}

/// The client for `kubeconfig`, or the one the environment implies.
pub async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, ClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let file =
                kube::config::Kubeconfig::read_from(path).map_err(|source| ClientError::Read {
                    path: path.to_owned(),
                    source,
                })?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .map_err(|source| ClientError::Kubeconfig {
                    path: path.to_owned(),
                    source,
                })?
        }
        None => match kube::Config::incluster() {
            Ok(c) => c,
            Err(_) => kube::Config::infer().await.map_err(ClientError::Infer)?,
        },
    };
    kube::Client::try_from(config).map_err(ClientError::Build)
}
