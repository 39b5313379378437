//! The `cosi.resource.State` service of a simulated node, as machined serves it: apid's routing
//! (`node` only; `nodes` is refused), the role table (reads for every role, writes for admins),
//! the access filter (known types and namespaces, sensitive types for admins, no writes from the
//! API), then Get, List with its label and ID queries, and Watch (`watch.rs`).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::api::{peer, Route, Stream_, Svc};
use crate::cosi::facts;
use crate::cosi::query;
use crate::cosi::store::Only;
use crate::cosi::watch;
use crate::node::{denied, is_admin, Node};
use talm_wire::proto::cosi::resource as cosi;

impl Svc {
    /// The node a COSI call goes to (`node` metadata; maintenance serves locally).
    fn cosi_node<T>(&self, req: &Request<T>, call: &str) -> Result<Arc<Node>, Status> {
        match self.route(req, &format!("/cosi.resource.State/{call}"), false)? {
            Route::Local => Ok(Arc::clone(&self.node)),
            Route::One(n) => self.target(&n),
            Route::Many(_) => unreachable!("refused by route"),
        }
    }

    /// Talos's access filter for reads of `ty` in `namespace`: the namespace the call reads.
    fn readable<T>(&self, req: &Request<T>, ty: &str, namespace: &str) -> Result<String, Status> {
        let def = facts::find_def(ty).ok_or_else(|| {
            Status::permission_denied(format!("resource type {ty:?} is not supported"))
        })?;
        if def.sensitive && !is_admin(&peer(req).roles) {
            return Err(denied());
        }
        let ns = if namespace.is_empty() {
            def.namespace.as_str()
        } else {
            namespace
        };
        if ns != def.namespace {
            return Err(Status::permission_denied(format!(
                "namespace {ns:?} is not supported"
            )));
        }
        Ok(ns.to_string())
    }

    /// A write: routed, then refused: by the role table for non-admins, by the access filter
    /// for everyone else (after the COSI server has decoded the resource it was given).
    async fn write<T>(
        &self,
        req: &Request<T>,
        call: &str,
        resource: Option<Option<&cosi::Resource>>,
    ) -> Status {
        let peer = peer(req);
        if let Err(st) = self.faults(call, &peer).await {
            return st;
        }
        if let Err(st) = self.cosi_node(req, call) {
            return st;
        }
        if !is_admin(&peer.roles) {
            return denied();
        }
        if let Some(r) = resource {
            if let Err(st) = decodable(r) {
                return st;
            }
        }
        Status::permission_denied("write access is not allowed")
    }
}

/// What COSI's `protobuf.Unmarshal` refuses before the state is reached.
fn decodable(r: Option<&cosi::Resource>) -> Result<(), Status> {
    let r = r.ok_or_else(|| Status::unknown("metadata is missing"))?;
    let md = r
        .metadata
        .as_ref()
        .ok_or_else(|| Status::unknown("metadata is missing"))?;
    if r.spec.is_none() {
        return Err(Status::unknown("spec is missing"));
    }
    if md.version != "undefined" {
        md.version.parse::<i64>().map_err(|e| {
            Status::unknown(format!(
                "error parsing version: strconv.ParseInt: parsing {:?}: {}",
                md.version,
                if e.kind() == &std::num::IntErrorKind::PosOverflow
                    || e.kind() == &std::num::IntErrorKind::NegOverflow
                {
                    "value out of range"
                } else {
                    "invalid syntax"
                }
            ))
        })?;
    }
    if md.phase != "running" && md.phase != "tearingDown" {
        return Err(Status::unknown(format!("unknown phase: {}", md.phase)));
    }
    Ok(())
}

#[tonic::async_trait]
impl cosi::state_server::State for Svc {
    type ListStream = Stream_<cosi::ListResponse>;
    type WatchStream = Stream_<cosi::WatchResponse>;

    async fn get(
        &self,
        req: Request<cosi::GetRequest>,
    ) -> Result<Response<cosi::GetResponse>, Status> {
        let peer = peer(&req);
        if self.faults("Get", &peer).await? {
            peer.kill.cancel();
            return Err(Status::unavailable("connection cut"));
        }
        let node = self.cosi_node(&req, "Get")?;
        let r = req.get_ref();
        let ns = self.readable(&req, &r.r#type, &r.namespace)?;
        node.synced_only(Only::Kinds(&[(&ns, &r.r#type)]))
            .with_kind(&ns, &r.r#type, |k| k.item(&r.id).cloned())
            .map(|res| {
                Response::new(cosi::GetResponse {
                    resource: Some(res),
                })
            })
            .ok_or_else(|| {
                Status::not_found(format!(
                    "resource {}({ns}/{}@undefined) doesn't exist",
                    r.r#type, r.id
                ))
            })
    }

    async fn list(
        &self,
        req: Request<cosi::ListRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        let peer = peer(&req);
        let drops = self.faults("List", &peer).await?;
        let node = self.cosi_node(&req, "List")?;
        let r = req.get_ref();
        let o = r.options.clone().unwrap_or_default();
        let queries = query::parse(&o.label_query, o.id_query.as_ref())?;
        let ns = self.readable(&req, &r.r#type, &r.namespace)?;
        let only = [(ns.as_str(), r.r#type.as_str())];
        let items: Vec<_> = node
            .synced_only(Only::Kinds(&only))
            .with_kind(&ns, &r.r#type, |k| {
                k.items()
                    .filter(|res| queries.matches(res))
                    .map(|res| cosi::ListResponse {
                        resource: Some(res.clone()),
                    })
                    .collect()
            });
        Ok(Response::new(Self::stream(items, drops, peer)))
    }

    async fn create(
        &self,
        req: Request<cosi::CreateRequest>,
    ) -> Result<Response<cosi::CreateResponse>, Status> {
        let resource = Some(req.get_ref().resource.as_ref());
        Err(self.write(&req, "Create", resource).await)
    }

    async fn update(
        &self,
        req: Request<cosi::UpdateRequest>,
    ) -> Result<Response<cosi::UpdateResponse>, Status> {
        let resource = Some(req.get_ref().new_resource.as_ref());
        Err(self.write(&req, "Update", resource).await)
    }

    async fn destroy(
        &self,
        req: Request<cosi::DestroyRequest>,
    ) -> Result<Response<cosi::DestroyResponse>, Status> {
        Err(self.write(&req, "Destroy", None).await)
    }

    async fn watch(
        &self,
        req: Request<cosi::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let peer = peer(&req);
        let drops = self.faults("Watch", &peer).await?;
        let node = self.cosi_node(&req, "Watch")?;
        let mut plan = watch::plan(req.get_ref())?;
        plan.namespace = self.readable(&req, &plan.ty, &plan.namespace)?;
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        watch::start(plan, node, tx).await?;
        let (out, out_rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                if out.send(item).await.is_err() {
                    return;
                }
                if drops {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    peer.kill.cancel();
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(out_rx),
        )))
    }
}
