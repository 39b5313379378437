//! A connection to one Talos endpoint, optionally targeting a node through it (`node`/`nodes`
//! metadata as talosctl sends it), with the machine and COSI calls talm makes. Every call has a
//! deadline; errors name the node and the call.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio_stream::StreamExt;
use tonic::transport::Endpoint;
use tonic::{Code, Request, Status, Streaming};

use super::creds::Auth;
use super::diagnose;
use super::errors::{self, Site, MACHINE, STATE};
use super::transport::{Checked, Dialer, Facts, Wire};
use talm_wire::proto::common;
use talm_wire::proto::cosi::resource as cosi;
use talm_wire::proto::machine;

pub use talm_wire::api::{DEFAULT_PORT, MAX_MESSAGE};

/// The most one read-to-the-end call holds (a whole log, a listing): twice the largest message.
/// Talos keeps a service's log in a small ring buffer and a container's in rotated files, so an
/// answer past this is a node sending without end.
pub const DRAINED_LIMIT: usize = 2 * MAX_MESSAGE;

/// How to connect.
#[derive(Clone, Debug)]
pub struct Options {
    pub auth: Auth,
    /// Deadline of the connection and of each call.
    pub timeout: Duration,
}

/// `fut` under a deadline as a Go context holds one: an answer that comes after the deadline
/// has passed counts as none, even when it was ready at the first poll (tokio's `timeout` looks
/// at the future before the clock, so a 1ns deadline could otherwise succeed on a fast loopback).
async fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
    let start = std::time::Instant::now();
    match tokio::time::timeout(limit, fut).await {
        Ok(v) if start.elapsed() <= limit => Some(v),
        _ => None,
    }
}

pub use talm_wire::api::{host, with_port, MAINTENANCE_CN};

mod change;
mod debug;
mod etcd;
mod inspect;
mod lifecycle;

pub use change::{PullUpdate, ServiceAction};
pub use debug::{DebugOutput, DebugRun, DebugSpec};
pub use etcd::Downgrade as EtcdDowngrade;
pub use lifecycle::Install;

/// Longest second look at a node whose authenticated connection ended silently.
const SECOND_LOOK: Duration = Duration::from_secs(2);

/// What the dialer's latest connection showed; when an authenticated one ended before the node
/// said anything, with a second look (a node refusing the client certificate says so then).
async fn facts_of(dialer: &Dialer, insecure: bool, timeout: Duration) -> Facts {
    let mut facts = dialer.wire.facts();
    if !insecure && facts.silent_end() && facts.second_look.is_none() {
        facts.second_look = Some(dialer.second_look(SECOND_LOOK.min(timeout)).await);
    }
    facts
}

/// A live connection to one endpoint.
#[derive(Clone)]
pub struct Client {
    /// The node as the user named it (the target, else the endpoint host): used in messages.
    pub node: String,
    /// `host:port` dialled.
    pub endpoint: String,
    /// How errors name the node: `node`, or `node (via endpoint)` when proxied.
    label: String,
    target: Option<String>,
    insecure: bool,
    timeout: Duration,
    channel: Checked,
}

impl Client {
    /// Connects to `endpoint`; `target` is the node the calls are for when it is not the
    /// endpoint itself (sent as metadata; maintenance mode ignores it).
    pub async fn connect(endpoint: &str, target: Option<&str>, opts: &Options) -> Result<Client> {
        let addr = with_port(endpoint);
        let node = target.map(str::to_string).unwrap_or_else(|| host(endpoint));
        let insecure = opts.auth.is_insecure();
        let label = if host(endpoint) == node {
            node.clone()
        } else {
            format!("{node} (via {addr})")
        };
        let site = Site {
            node: &label,
            named: &node,
            endpoint: &addr,
            call: errors::CONNECT,
            service: MACHINE,
            insecure,
        };
        let uri = format!("http://{addr}");
        let ep = Endpoint::from_shared(uri.clone()).map_err(|e| {
            talm_base::error::hinted(
                format!("node {node}: {addr:?} is not a valid endpoint: {e}"),
                "give endpoints and nodes as IP, host or host:port",
            )
        })?;
        // The connect deadline is the timeout around `connecting` below, so that its expiry is
        // named as one (the transport's own would come back as an opaque transport error).
        let (ca, identity) = match &opts.auth {
            Auth::Insecure | Auth::Pinned(_) => (None, None),
            Auth::Mutual { ca_pem, identity } => (
                Some(super::verify::ca_verifier(ca_pem)?),
                Some(identity.certified()?),
            ),
            Auth::Unverified { identity } => (None, Some(identity.certified()?)),
        };
        let port = addr
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(DEFAULT_PORT);
        let dialer = Dialer {
            host: host(endpoint),
            port,
            ca,
            identity,
            pins: match &opts.auth {
                Auth::Pinned(pins) => pins.clone().into(),
                _ => Arc::from([]),
            },
            wire: Wire::default(),
        };
        let connecting = ep.connect_with_connector(dialer.clone());
        let channel = match within(opts.timeout, connecting).await {
            None => return Err(errors::timeout(site, opts.timeout)),
            Some(Err(e)) => {
                let facts = facts_of(&dialer, insecure, opts.timeout).await;
                return Err(diagnose::connect(site, &facts, &e));
            }
            Some(Ok(c)) => c,
        };
        Ok(Client {
            target: target.map(str::to_string),
            node,
            label,
            endpoint: addr,
            insecure,
            timeout: opts.timeout,
            channel: Checked { channel, dialer },
        })
    }

    pub fn is_insecure(&self) -> bool {
        self.insecure
    }

    fn site<'a>(&'a self, call: &'a str, service: &'static str) -> Site<'a> {
        Site {
            node: &self.label,
            named: &self.node,
            endpoint: &self.endpoint,
            call,
            service,
            insecure: self.insecure,
        }
    }

    /// A call's failure, named from what the connection showed; one that ends when the deadline
    /// has passed is the deadline (tonic reports its own as a bare `Cancelled`).
    pub(super) async fn failed(
        &self,
        call: &str,
        service: &'static str,
        st: &Status,
        started: std::time::Instant,
    ) -> anyhow::Error {
        let site = self.site(call, service);
        if errors::is_deadline(st) || started.elapsed() >= self.timeout {
            return errors::timeout(site, self.timeout);
        }
        let facts = facts_of(&self.channel.dialer, self.insecure, self.timeout).await;
        diagnose::status(site, &facts, st)
    }

    /// The connection itself, for a caller that speaks a service through its own generated
    /// client (the simulator's tests, as a third-party Talos client would).
    pub fn channel(&self) -> Checked {
        self.channel.clone()
    }

    /// A failure in a long-lived stream (a watch, a followed log): no deadline applies.
    pub(super) async fn stream_failed(
        &self,
        call: &str,
        service: &'static str,
        st: &Status,
    ) -> anyhow::Error {
        let facts = facts_of(&self.channel.dialer, self.insecure, self.timeout).await;
        diagnose::status(self.site(call, service), &facts, st)
    }

    /// The raw MachineService client over this connection (Talos's message limits).
    pub fn machine(&self) -> machine::machine_service_client::MachineServiceClient<Checked> {
        machine::machine_service_client::MachineServiceClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE)
    }

    /// The raw COSI State client over this connection.
    pub fn state(&self) -> cosi::state_client::StateClient<Checked> {
        cosi::state_client::StateClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE)
    }

    /// A request with the node targeting talosctl uses: `nodes` for machine calls (one-to-many
    /// proxying), `node` for COSI calls. Maintenance connections send none.
    pub(super) fn request<T>(&self, msg: T, many: bool) -> Request<T> {
        let mut r = self.stream_request(msg, many);
        r.set_timeout(self.timeout);
        r
    }

    /// The same targeting without a deadline, for streams that stay open (watches, follows).
    pub(super) fn stream_request<T>(&self, msg: T, many: bool) -> Request<T> {
        let mut r = Request::new(msg);
        if let (false, Some(t)) = (self.insecure, &self.target) {
            if let Ok(v) = t.parse() {
                r.metadata_mut()
                    .insert(if many { "nodes" } else { "node" }, v);
            }
        }
        r
    }

    /// Runs one call under the deadline and turns failures into node-named errors.
    pub(super) async fn call<T>(
        &self,
        call: &str,
        service: &'static str,
        fut: impl Future<Output = Result<T, Status>>,
    ) -> Result<T> {
        let started = std::time::Instant::now();
        match within(self.timeout, fut).await {
            None => Err(errors::timeout(self.site(call, service), self.timeout)),
            Some(Err(st)) => Err(self.failed(call, service, &st, started).await),
            Some(Ok(v)) => Ok(v),
        }
    }

    /// Errors that a proxying node delivers inside a reply's metadata.
    pub(super) fn in_band(&self, call: &str, md: Option<&common::Metadata>) -> Result<()> {
        let Some(md) = md else { return Ok(()) };
        if md.error.is_empty() {
            return Ok(());
        }
        let st = match &md.status {
            Some(s) => Status::new(Code::from(s.code), s.message.clone()),
            None => Status::unknown(md.error.clone()),
        };
        Err(errors::answered(self.site(call, MACHINE), &st))
    }

    /// The first message of a one-to-many reply, after its in-band error check.
    pub(super) fn first<M>(
        &self,
        call: &str,
        msgs: Vec<M>,
        md: impl Fn(&M) -> Option<&common::Metadata>,
    ) -> Result<M> {
        for m in &msgs {
            self.in_band(call, md(m))?;
        }
        msgs.into_iter().next().ok_or_else(|| {
            talm_base::error::plain(format!(
                "node {}: {call}: the node sent an empty reply",
                self.node
            ))
        })
    }

    pub async fn version(&self) -> Result<machine::Version> {
        let mut c = self.machine();
        let r = self
            .call("Version", MACHINE, c.version(self.request((), true)))
            .await?;
        self.first("Version", r.into_inner().messages, |m| m.metadata.as_ref())
    }

    pub async fn hostname(&self) -> Result<String> {
        let mut c = self.machine();
        let r = self
            .call("Hostname", MACHINE, c.hostname(self.request((), true)))
            .await?;
        Ok(self
            .first("Hostname", r.into_inner().messages, |m| m.metadata.as_ref())?
            .hostname)
    }

    /// One resource, or `None` when the node has no such resource.
    pub async fn get(&self, namespace: &str, ty: &str, id: &str) -> Result<Option<cosi::Resource>> {
        let mut c = self.state();
        let req = cosi::GetRequest {
            namespace: namespace.into(),
            r#type: ty.into(),
            id: id.into(),
            options: Some(cosi::GetOptions {}),
        };
        let fut = c.get(self.request(req, false));
        let call = format!("get {ty}");
        self.call(&call, STATE, async {
            match fut.await {
                Err(st) if st.code() == Code::NotFound => Ok(None),
                r => r.map(|r| r.into_inner().resource),
            }
        })
        .await
    }

    /// Every resource of a type in a namespace.
    pub async fn list(&self, namespace: &str, ty: &str) -> Result<Vec<cosi::Resource>> {
        self.list_with(namespace, ty, cosi::ListOptions::default())
            .await
    }

    /// The resources of a type in a namespace that pass the label and ID queries of `options`.
    pub async fn list_with(
        &self,
        namespace: &str,
        ty: &str,
        options: cosi::ListOptions,
    ) -> Result<Vec<cosi::Resource>> {
        let mut c = self.state();
        let req = cosi::ListRequest {
            namespace: namespace.into(),
            r#type: ty.into(),
            options: Some(options),
        };
        let call = format!("list {ty}");
        let stream = self
            .call(&call, STATE, c.list(self.stream_request(req, false)))
            .await?
            .into_inner();
        let items = self.drain(&call, STATE, stream).await?;
        Ok(items.into_iter().filter_map(|r| r.resource).collect())
    }

    /// The next message of a server stream, `None` at its end. The deadline measures silence,
    /// as talosctl's streams do: a stream fails once the node has said nothing for the call
    /// timeout, however long it has been flowing.
    pub(super) async fn next_within<M>(
        &self,
        call: &str,
        service: &'static str,
        stream: &mut Streaming<M>,
    ) -> Result<Option<M>> {
        let started = std::time::Instant::now();
        match tokio::time::timeout(self.timeout, stream.next()).await {
            Err(_) => Err(errors::timeout(self.site(call, service), self.timeout)),
            Ok(None) => Ok(None),
            Ok(Some(Err(st))) => Err(self.failed(call, service, &st, started).await),
            Ok(Some(Ok(m))) => Ok(Some(m)),
        }
    }

    /// Reads a server stream to its end, each message within the deadline and the whole within
    /// [`DRAINED_LIMIT`]: a node that sends without end is cut off, named.
    async fn drain<M: prost::Message>(
        &self,
        call: &str,
        service: &'static str,
        mut stream: Streaming<M>,
    ) -> Result<Vec<M>> {
        let mut out = Vec::new();
        let mut held = 0usize;
        while let Some(m) = self.next_within(call, service, &mut stream).await? {
            held += m.encoded_len();
            if held > DRAINED_LIMIT {
                return Err(self.site(call, service).error(
                    errors::Kind::Status(Code::ResourceExhausted as i32),
                    format!(
                        "the answer passed {} MiB, more than talm holds in memory for one call",
                        DRAINED_LIMIT >> 20
                    ),
                    "the node sends without end: check it (`talm dmesg`, `talm service`); logs of any length are read line by line by `talm logs` (with --tail)",
                ));
            }
            out.push(m);
        }
        Ok(out)
    }

    /// The first batch of a watch with bootstrap contents: the resources as they are now (the
    /// `BOOTSTRAPPED` marker ends it).
    pub async fn watch_current(&self, namespace: &str, ty: &str) -> Result<Vec<cosi::Resource>> {
        let mut c = self.state();
        let req = cosi::WatchRequest {
            namespace: namespace.into(),
            r#type: ty.into(),
            id: None,
            options: Some(cosi::WatchOptions {
                bootstrap_contents: true,
                ..Default::default()
            }),
            api_version: 1,
        };
        let call = format!("watch {ty}");
        let mut stream = self
            .call(&call, STATE, c.watch(self.request(req, false)))
            .await?
            .into_inner();
        let read = async {
            let mut out = Vec::new();
            while let Some(batch) = stream.next().await {
                for ev in batch?.event {
                    if ev.event_type == cosi::EventType::Bootstrapped as i32 {
                        return Ok(out);
                    }
                    out.extend(ev.resource);
                }
            }
            Ok::<_, Status>(out)
        };
        self.call(&call, STATE, read).await
    }

    pub async fn apply(
        &self,
        req: machine::ApplyConfigurationRequest,
    ) -> Result<machine::ApplyConfiguration> {
        let mut c = self.machine();
        let r = self
            .call(
                "ApplyConfiguration",
                MACHINE,
                c.apply_configuration(self.request(req, true)),
            )
            .await?;
        self.first("ApplyConfiguration", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })
    }

    pub async fn bootstrap(&self, req: machine::BootstrapRequest) -> Result<()> {
        let mut c = self.machine();
        let r = self
            .call("Bootstrap", MACHINE, c.bootstrap(self.request(req, true)))
            .await?;
        self.first("Bootstrap", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })?;
        Ok(())
    }

    /// The admin kubeconfig the node issues (the file inside the streamed archive).
    pub async fn kubeconfig(&self) -> Result<Vec<u8>> {
        let mut c = self.machine();
        let stream = self
            .call(
                "Kubeconfig",
                MACHINE,
                c.kubeconfig(self.stream_request((), true)),
            )
            .await?
            .into_inner();
        let chunks = self.drain("Kubeconfig", MACHINE, stream).await?;
        let mut archive = Vec::new();
        for d in &chunks {
            self.in_band("Kubeconfig", d.metadata.as_ref())?;
            archive.extend_from_slice(&d.bytes);
        }
        let (name, data) = talm_wire::archive::first_entry(&archive).map_err(|e| {
            talm_base::error::hinted(
                format!("node {}: Kubeconfig: unreadable archive: {e:#}", self.node),
                "the stream may have been cut; retry",
            )
        })?;
        if name != "kubeconfig" {
            return Err(talm_base::error::plain(format!(
                "node {}: Kubeconfig: the archive holds {name:?}, not \"kubeconfig\"",
                self.node
            )));
        }
        Ok(data)
    }

    pub async fn upgrade(&self, req: machine::UpgradeRequest) -> Result<machine::Upgrade> {
        let mut c = self.machine();
        let r = self
            .call("Upgrade", MACHINE, c.upgrade(self.request(req, true)))
            .await?;
        self.first("Upgrade", r.into_inner().messages, |m| m.metadata.as_ref())
    }

    pub async fn reboot(&self, req: machine::RebootRequest) -> Result<machine::Reboot> {
        let mut c = self.machine();
        let r = self
            .call("Reboot", MACHINE, c.reboot(self.request(req, true)))
            .await?;
        self.first("Reboot", r.into_inner().messages, |m| m.metadata.as_ref())
    }

    pub async fn reset(&self, req: machine::ResetRequest) -> Result<machine::Reset> {
        let mut c = self.machine();
        let r = self
            .call("Reset", MACHINE, c.reset(self.request(req, true)))
            .await?;
        self.first("Reset", r.into_inner().messages, |m| m.metadata.as_ref())
    }

    pub async fn services(&self) -> Result<Vec<machine::ServiceInfo>> {
        let mut c = self.machine();
        let r = self
            .call(
                "ServiceList",
                MACHINE,
                c.service_list(self.request((), true)),
            )
            .await?;
        Ok(self
            .first("ServiceList", r.into_inner().messages, |m| {
                m.metadata.as_ref()
            })?
            .services)
    }

    /// A client certificate and talosconfig issued by the node for `roles`, valid for `ttl`.
    pub async fn generate_client_configuration(
        &self,
        roles: &[&str],
        ttl: Duration,
    ) -> Result<machine::GenerateClientConfiguration> {
        let mut c = self.machine();
        let req = machine::GenerateClientConfigurationRequest {
            roles: roles.iter().map(|r| r.to_string()).collect(),
            crt_ttl: Some(prost_types::Duration {
                seconds: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX),
                nanos: ttl.subsec_nanos() as i32,
            }),
        };
        let call = "GenerateClientConfiguration";
        let r = self
            .call(
                call,
                MACHINE,
                c.generate_client_configuration(self.request(req, true)),
            )
            .await?;
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())
    }

    /// A service's log lines (not following).
    pub async fn logs(&self, req: machine::LogsRequest) -> Result<Vec<u8>> {
        let mut c = self.machine();
        let stream = self
            .call("Logs", MACHINE, c.logs(self.stream_request(req, true)))
            .await?
            .into_inner();
        self.data("Logs", stream).await
    }

    /// The kernel log (not following).
    pub async fn dmesg(&self, req: machine::DmesgRequest) -> Result<Vec<u8>> {
        let mut c = self.machine();
        let stream = self
            .call("Dmesg", MACHINE, c.dmesg(self.stream_request(req, true)))
            .await?
            .into_inner();
        self.data("Dmesg", stream).await
    }

    async fn data(&self, call: &str, stream: Streaming<common::Data>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for d in self.drain(call, MACHINE, stream).await? {
            self.in_band(call, d.metadata.as_ref())?;
            out.extend_from_slice(&d.bytes);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_default_port() {
        assert_eq!(with_port("10.0.0.1"), "10.0.0.1:50000");
        assert_eq!(with_port("10.0.0.1:123"), "10.0.0.1:123");
        assert_eq!(with_port("fd00::1"), "[fd00::1]:50000");
        assert_eq!(with_port("[fd00::1]:7"), "[fd00::1]:7");
        assert_eq!(host("[fd00::1]:7"), "fd00::1");
        assert_eq!(host("node-1"), "node-1");
    }
}
