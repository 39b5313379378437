//! The cluster's Kubernetes API through the ecosystem's client (`kube`): a connection made
//! from the admin kubeconfig a control plane issues (its server optionally overridden, as
//! talosctl's `--k8s-endpoint`), and the reads talm makes of it (nodes, pods, workloads).

pub mod apply;
pub mod checks;
pub mod drain;
pub mod select;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use talm_base::error::hinted;

/// A connection to one cluster's Kubernetes API.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    /// The API server's URL, for messages.
    pub server: String,
}

/// `host[:port]` (6443 when no port) as an https URL, as talosctl reads `--k8s-endpoint`.
pub fn endpoint_url(endpoint: &str) -> String {
    let bare = endpoint
        .trim()
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let has_port = match bare.rsplit_once(':') {
        Some((host, port)) => {
            port.parse::<u16>().is_ok() && (!host.contains(':') || host.ends_with(']'))
        }
        None => false,
    };
    if has_port {
        format!("https://{bare}")
    } else if bare.contains(':') && !bare.starts_with('[') {
        format!("https://[{bare}]:6443")
    } else {
        format!("https://{bare}:6443")
    }
}

impl Cluster {
    /// Connects with a kubeconfig's text (its current context); `endpoint` replaces the
    /// server's host and port. Nothing is sent until the first call.
    pub async fn connect(kubeconfig: &str, endpoint: Option<&str>) -> Result<Cluster> {
        let file = Kubeconfig::from_yaml(kubeconfig).map_err(|e| {
            hinted(
                format!("the kubeconfig cannot be read: {e}"),
                "fetch a fresh one from a control plane with `talm kubeconfig`",
            )
        })?;
        let mut config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .map_err(|e| {
                hinted(
                    format!("the kubeconfig cannot be used: {e}"),
                    "fetch a fresh one from a control plane with `talm kubeconfig`",
                )
            })?;
        if let Some(e) = endpoint.filter(|e| !e.is_empty()) {
            let url = endpoint_url(e);
            config.cluster_url = url
                .parse()
                .with_context(|| format!("--k8s-endpoint {e:?} is not a host[:port]"))?;
        }
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let client = kube::Client::try_from(config)
            .with_context(|| format!("cannot make a Kubernetes client for {server}"))?;
        Ok(Cluster { client, server })
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Every Node.
    pub async fn nodes(&self) -> Result<Vec<Node>> {
        let api: Api<Node> = Api::all(self.client());
        Ok(api
            .list(&ListParams::default())
            .await
            .map_err(|e| self.failed(&format!("Get \"{}/api/v1/nodes\"", self.server), e))?
            .items)
    }

    /// One Node, `None` when there is none of that name.
    pub async fn node(&self, name: &str) -> Result<Option<Node>> {
        let api: Api<Node> = Api::all(self.client());
        api.get_opt(name)
            .await
            .map_err(|e| self.failed(&format!("Get \"{}/api/v1/nodes/{name}\"", self.server), e))
    }

    /// The pods of a namespace (every namespace when empty) matching a label selector and a
    /// field selector (either may be empty).
    pub async fn pods(&self, namespace: &str, labels: &str, fields: &str) -> Result<Vec<Pod>> {
        let api: Api<Pod> = if namespace.is_empty() {
            Api::all(self.client())
        } else {
            Api::namespaced(self.client(), namespace)
        };
        let mut lp = ListParams::default();
        if !labels.is_empty() {
            lp = lp.labels(labels);
        }
        if !fields.is_empty() {
            lp = lp.fields(fields);
        }
        Ok(api
            .list(&lp)
            .await
            .map_err(|e| {
                let at = match namespace {
                    "" => "/api/v1/pods".to_string(),
                    ns => format!("/api/v1/namespaces/{ns}/pods"),
                };
                self.failed(&format!("Get \"{}{at}\"", self.server), e)
            })?
            .items)
    }

    /// A failed call: `<what>: <cause>`, a transport failure in client-go's words
    /// (`dial tcp HOST:PORT: connect: connection refused`).
    pub fn failed(&self, what: &str, e: kube::Error) -> anyhow::Error {
        let authority = self
            .server
            .split_once("://")
            .map_or(self.server.as_str(), |(_, r)| r)
            .trim_end_matches('/');
        anyhow::anyhow!("{what}: {}", describe(&e, authority))
    }
}

/// A Kubernetes error's text: an API answer's message, or the transport's cause as Go's net
/// package words it for the server at `authority`.
pub fn describe(e: &kube::Error, authority: &str) -> String {
    if let kube::Error::Api(s) = e {
        return s.message.clone();
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            let why = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
                std::io::ErrorKind::ConnectionReset => "read: connection reset by peer".to_string(),
                std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
                _ => io.to_string(),
            };
            return format!("dial tcp {authority}: {why}");
        }
        src = s.source();
    }
    let mut text = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let t = s.to_string();
        if !text.contains(&t) {
            text = format!("{text}: {t}");
        }
        src = s.source();
    }
    text
}

/// The HTTP status of an API answer (429 for a refused eviction, 404...), when it was one.
pub fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Whether a Node's Ready condition is True.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_take_talosctls_default_port() {
        for (given, url) in [
            ("10.0.0.1", "https://10.0.0.1:6443"),
            ("10.0.0.1:7443", "https://10.0.0.1:7443"),
            ("https://api.example.com", "https://api.example.com:6443"),
            ("fd00::1", "https://[fd00::1]:6443"),
            ("[fd00::1]:7443", "https://[fd00::1]:7443"),
        ] {
            assert_eq!(endpoint_url(given), url, "{given}");
        }
    }
}
