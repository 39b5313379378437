//! TimeService of a simulated node: its clock (skewed by the `clock_skew` fault) beside the
//! time server's, for any reader role.

use tonic::{Request, Response, Status};

use super::inspect::{allow, READERS};
use super::{Routed, Svc};
use crate::node::Node;
use crate::world::World;
use talm_wire::proto::common;
use talm_wire::proto::time as timeapi;

routed!(timeapi::Time);

impl Svc {
    fn time_reply(n: &Node, server: Option<&str>) -> Result<timeapi::Time, Status> {
        let w = World::of(n);
        let server = match server {
            None => w.ntp.clone(),
            Some("") => return Err(Status::invalid_argument("ntp server is required")),
            Some(s) if s.starts_with("/dev/") => {
                return Err(Status::unknown(format!(
                    "error querying PTP device {s:?}: open {s}: no such file or directory"
                )))
            }
            Some(s)
                if s.contains(char::is_whitespace)
                    || [".invalid", ".test", ".example"]
                        .iter()
                        .any(|t| s.ends_with(t)) =>
            {
                return Err(Status::unknown(format!(
                    "error querying NTP server {s:?}: lookup {s} on 127.0.0.53:53: no such host"
                )))
            }
            Some(s) => s.to_string(),
        };
        let stamp = |t: f64| prost_types::Timestamp {
            seconds: t.floor() as i64,
            nanos: (t.fract() * 1e9) as i32,
        };
        let skew = ((w.rand(&server) % 6000) as f64 - 3000.0) / 1e6;
        Ok(timeapi::Time {
            metadata: None,
            server,
            // A node whose clock is off (the `clock_skew` fault) shows it next to its server's.
            localtime: Some(stamp(w.now + n.faults().skew().seconds())),
            remotetime: Some(stamp(w.now + 0.0004 + skew)),
        })
    }
}

#[tonic::async_trait]
impl timeapi::time_service_server::TimeService for Svc {
    async fn time(&self, req: Request<()>) -> Result<Response<timeapi::TimeResponse>, Status> {
        let messages = self
            .unary(&req, "Time", |n, roles| {
                allow(roles, &READERS)?;
                Self::time_reply(n, None)
            })
            .await?;
        Ok(Response::new(timeapi::TimeResponse { messages }))
    }

    async fn time_check(
        &self,
        req: Request<timeapi::TimeRequest>,
    ) -> Result<Response<timeapi::TimeResponse>, Status> {
        let server = req.get_ref().server.clone();
        let messages = self
            .unary(&req, "TimeCheck", |n, roles| {
                allow(roles, &READERS)?;
                Self::time_reply(n, Some(&server))
            })
            .await?;
        Ok(Response::new(timeapi::TimeResponse { messages }))
    }
}
