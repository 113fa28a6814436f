//! The HTTPS server: TLS accept loop, HTTP/1.1 and h2 via hyper-util, graceful shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::auth::{Authenticator, TokenRegistry};
use crate::cluster::{Cluster, ClusterConfig, Gvr, WriteOptions};
use crate::error::ApiError;
use crate::http::{HttpState, router};

/// How to start a server.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Listen address (`127.0.0.1:0` for an ephemeral port).
    pub listen: SocketAddr,
    /// Where to write the kubeconfig.
    pub kubeconfig: PathBuf,
    /// Cluster tunables.
    pub cluster: ClusterConfig,
    /// Controllers, eviction and admission webhooks (None: a pure API server).
    pub behaviour: Option<crate::controllers::ClusterBehaviour>,
}

impl ServerOptions {
    /// Ephemeral loopback port, default cluster config.
    pub fn new(kubeconfig: impl Into<PathBuf>) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            kubeconfig: kubeconfig.into(),
            cluster: ClusterConfig::default(),
            behaviour: None,
        }
    }

    /// The same options with the cluster's behaviour (nodes, controllers, eviction, webhooks).
    pub fn with_behaviour(mut self, behaviour: crate::controllers::ClusterBehaviour) -> Self {
        self.behaviour = Some(behaviour);
        self
    }
}

/// Starting the server failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Certificates.
    #[error(transparent)]
    Certs(#[from] crate::tls::CertError),
    /// Binding the listen address.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// Writing the kubeconfig.
    #[error("cannot write the kubeconfig {0}: {1}")]
    Kubeconfig(PathBuf, std::io::Error),
    /// Starting the cluster's behaviour (creating the nodes).
    #[error("cannot start the cluster behaviour: {0}")]
    Behaviour(crate::error::ApiError),
    /// Creating the bootstrap RBAC policy.
    #[error("cannot create the bootstrap RBAC policy: {0}")]
    Policy(crate::error::ApiError),
}

/// Writing a ServiceAccount kubeconfig failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The ServiceAccount does not exist (or could not be created).
    #[error("cannot get a token for the service account {namespace}/{name}: {error}")]
    ServiceAccount {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The API error.
        error: Box<ApiError>,
    },
    /// Writing the file.
    #[error("cannot write the kubeconfig {0}: {1}")]
    Write(PathBuf, std::io::Error),
}

/// A running kube-sim. Dropping it stops the server.
#[derive(Debug)]
pub struct Server {
    url: String,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    ca_pem: String,
    token: String,
    tokens: Arc<TokenRegistry>,
    cluster: Cluster,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    behaviour: Option<crate::controllers::BehaviourHandle>,
}

impl Server {
    /// Starts a server with a fresh cluster.
    pub async fn start(options: ServerOptions) -> Result<Self, StartError> {
        let config = match &options.behaviour {
            Some(behaviour) => behaviour.cluster_config(options.cluster.clone()),
            None => options.cluster.clone(),
        };
        let cluster = Cluster::new(config);
        Self::start_with(options, cluster).await
    }

    /// Starts a server for an existing cluster (e.g. one pre-seeded in-process). With
    /// `options.behaviour`, build the cluster with `ClusterBehaviour::cluster_config`.
    pub async fn start_with(options: ServerOptions, cluster: Cluster) -> Result<Self, StartError> {
        crate::auth::bootstrap::install(&cluster).await.map_err(StartError::Policy)?;
        let tokens = Arc::new(TokenRegistry::default());
        crate::auth::token_request::register(&cluster, tokens.clone());
        let certs = crate::tls::generate()?;
        let behaviour = match options.behaviour.clone() {
            Some(b) => {
                let b = crate::controllers::ClusterBehaviour { root_ca_pem: certs.ca_pem.clone(), ..b };
                Some(crate::controllers::start(&cluster, b).await.map_err(StartError::Behaviour)?)
            }
            None => None,
        };
        let tls = crate::tls::server_config(&certs)?;
        let listener =
            TcpListener::bind(options.listen).await.map_err(|e| StartError::Bind(options.listen, e))?;
        let addr = listener.local_addr().map_err(|e| StartError::Bind(options.listen, e))?;
        let url = format!("https://{addr}");
        let token = uuid::Uuid::new_v4().simple().to_string();
        crate::tls::write_kubeconfig(&options.kubeconfig, &url, &certs.ca_pem, &token)
            .map_err(|e| StartError::Kubeconfig(options.kubeconfig.clone(), e))?;
        let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
        let auth = Arc::new(Authenticator::new(token.clone(), tokens.clone()));
        let state = HttpState { cluster: cluster.clone(), server_address: addr.to_string(), auth };
        let task = tokio::spawn(accept_loop(listener, tls, state, shutdown_rx));
        Ok(Self {
            url,
            addr,
            kubeconfig: options.kubeconfig,
            ca_pem: certs.ca_pem,
            token,
            tokens,
            cluster,
            shutdown,
            task: Some(task),
            behaviour,
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// The kubeconfig written at start.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }
    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
    /// The bearer token in the kubeconfig: user `admin` in `system:masters`, allowed
    /// everything.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Creates the namespace and the ServiceAccount `namespace/name` when missing (no
    /// admission), as `--service-account-kubeconfig` does.
    pub async fn ensure_service_account(&self, namespace: &str, name: &str) -> Result<(), ApiError> {
        let options = WriteOptions { skip_admission: true, ..WriteOptions::default() };
        let namespaces = Gvr::new("", "v1", "namespaces");
        if self.cluster.get(&namespaces, None, namespace).is_err() {
            let object =
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
            match self.cluster.create(&namespaces, None, object, &options).await {
                Err(e) if e.code != 409 => return Err(e),
                _ => {}
            }
        }
        let accounts = Gvr::new("", "v1", "serviceaccounts");
        if self.cluster.get(&accounts, Some(namespace), name).is_err() {
            let object = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace}});
            match self.cluster.create(&accounts, Some(namespace), object, &options).await {
                Err(e) if e.code != 409 => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// A new bearer token for the existing ServiceAccount `namespace/name` (404 when it does
    /// not exist). It never expires; it stops working when the ServiceAccount is deleted.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        crate::auth::token_request::issue_token(&self.cluster, &self.tokens, namespace, name, None)
    }

    /// Writes a kubeconfig like the admin one (same server, CA and context name) that
    /// authenticates as the existing ServiceAccount `namespace/name`, with context namespace
    /// `namespace`.
    pub fn write_service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
        path: impl AsRef<Path>,
    ) -> Result<(), KubeconfigError> {
        let token =
            self.service_account_token(namespace, name).map_err(|error| KubeconfigError::ServiceAccount {
                namespace: namespace.into(),
                name: name.into(),
                error: Box::new(error),
            })?;
        let path = path.as_ref();
        let user = crate::auth::service_account_username(namespace, name);
        crate::tls::write_kubeconfig_as(path, &self.url, &self.ca_pem, &user, &token, namespace)
            .map_err(|e| KubeconfigError::Write(path.to_path_buf(), e))
    }

    /// The cluster (in-process API).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }
    /// The running behaviour (None for a pure API server).
    pub fn behaviour(&self) -> Option<&crate::controllers::BehaviourHandle> {
        self.behaviour.as_ref()
    }

    /// Stops accepting, ends open watches and waits (briefly) for connections to finish.
    pub async fn shutdown(mut self) {
        if let Some(mut behaviour) = self.behaviour.take() {
            behaviour.stop();
        }
        self.shutdown.send_replace(true);
        self.cluster.close_watches();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut behaviour) = self.behaviour.take() {
            behaviour.stop();
        }
        self.shutdown.send_replace(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: std::sync::Arc<rustls::ServerConfig>,
    state: HttpState,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let app = router(state);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        let Ok((tcp, _)) = accepted else { continue };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let mut conn_shutdown = shutdown.clone();
        connections.spawn(async move {
            let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
            else {
                return;
            };
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = conn_shutdown.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(3), conn).await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}
