//! Long-lived streams from a node: a COSI watch with its options (kind or single resource,
//! bootstrap contents, tail events, queries, bookmarks), and followed logs or kernel messages.
//! Opening one is under the call deadline; once open it runs until the node ends it or the
//! caller drops it.

use std::collections::VecDeque;

use anyhow::Result;
use tokio_stream::StreamExt;
use tonic::Streaming;

use super::client::Client;
use super::errors::{MACHINE, STATE};
use talm_wire::proto::common;
use talm_wire::proto::cosi::resource as cosi;
use talm_wire::proto::machine;

/// An open COSI watch.
pub struct Watch {
    client: Client,
    call: String,
    stream: Streaming<cosi::WatchResponse>,
    pending: VecDeque<cosi::Event>,
}

impl Watch {
    /// The next event, `None` when the node ended the watch. Aggregated responses are handed
    /// out one event at a time.
    pub async fn next(&mut self) -> Result<Option<cosi::Event>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            match self.stream.next().await {
                None => return Ok(None),
                Some(Ok(r)) => self.pending.extend(r.event),
                Some(Err(st)) => {
                    return Err(self.client.stream_failed(&self.call, STATE, &st).await)
                }
            }
        }
    }
}

/// An open Logs or Dmesg stream.
pub struct DataStream {
    client: Client,
    call: &'static str,
    stream: Streaming<common::Data>,
}

impl DataStream {
    /// The next chunk of bytes, `None` when the node ended the stream; an error the node
    /// reports in-band fails it.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>> {
        match self.stream.next().await {
            None => Ok(None),
            Some(Ok(d)) => {
                self.client.in_band(self.call, d.metadata.as_ref())?;
                Ok(Some(d.bytes))
            }
            Some(Err(st)) => Err(self.client.stream_failed(self.call, MACHINE, &st).await),
        }
    }
}

impl Client {
    /// Watches resources of `ty` in `namespace` (one resource when `id` is given) with
    /// `options`. Returns once the node signalled the watch is registered (its first, empty
    /// response, which COSI clients discard).
    pub async fn watch(
        &self,
        namespace: &str,
        ty: &str,
        id: Option<&str>,
        options: cosi::WatchOptions,
    ) -> Result<Watch> {
        let mut c = self.state();
        let req = cosi::WatchRequest {
            namespace: namespace.into(),
            r#type: ty.into(),
            id: id.map(str::to_string),
            options: Some(options),
            api_version: 1,
        };
        let call = format!("watch {ty}");
        let req = self.stream_request(req, false);
        let (stream, first) = self
            .call(&call, STATE, async {
                let mut s = c.watch(req).await?.into_inner();
                let first = s.message().await?;
                Ok((s, first))
            })
            .await?;
        Ok(Watch {
            client: self.clone(),
            call,
            stream,
            // The ready marker carries no events; anything else is kept, not lost.
            pending: first.map(|r| r.event.into()).unwrap_or_default(),
        })
    }

    /// A service's log as a stream: with `follow`, new lines keep coming until it is dropped.
    pub async fn logs_stream(&self, req: machine::LogsRequest) -> Result<DataStream> {
        let mut c = self.machine();
        let req = self.stream_request(req, true);
        let stream = self.call("Logs", MACHINE, c.logs(req)).await?.into_inner();
        Ok(DataStream {
            client: self.clone(),
            call: "Logs",
            stream,
        })
    }

    /// A packet capture as a stream of pcap file bytes, until the node ends it or it is dropped.
    pub async fn packet_capture_stream(
        &self,
        req: machine::PacketCaptureRequest,
    ) -> Result<DataStream> {
        let mut c = self.machine();
        let req = self.stream_request(req, true);
        let stream = self
            .call("PacketCapture", MACHINE, c.packet_capture(req))
            .await?
            .into_inner();
        Ok(DataStream {
            client: self.clone(),
            call: "PacketCapture",
            stream,
        })
    }

    /// The kernel log as a stream: with `follow`, new records keep coming until it is dropped.
    pub async fn dmesg_stream(&self, req: machine::DmesgRequest) -> Result<DataStream> {
        let mut c = self.machine();
        let req = self.stream_request(req, true);
        let stream = self
            .call("Dmesg", MACHINE, c.dmesg(req))
            .await?
            .into_inner();
        Ok(DataStream {
            client: self.clone(),
            call: "Dmesg",
            stream,
        })
    }
}
