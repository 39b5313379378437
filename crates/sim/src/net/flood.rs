//! The `flood` fault: a data stream (Logs, Dmesg, Read, Copy, EtcdSnapshot) replaced by a made-up
//! one — the same chunk over and over, endless or counted, at full speed or one per interval,
//! optionally left open in silence after the last chunk. Rehearses nodes that send more, slower
//! or longer than a client expects.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tonic::Status;

use crate::api::Stream_;
use talm_wire::proto::common;

/// A made-up data stream.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flood {
    /// The calls whose stream is replaced (RPC names, or `*`).
    pub calls: Vec<String>,
    /// What every message carries.
    pub chunk: String,
    /// How many messages; endless when absent.
    #[serde(default)]
    pub count: Option<u64>,
    /// The pause before each message (Go duration text in a file); none when absent.
    #[serde(default, deserialize_with = "crate::net::faults::go_duration")]
    pub every: Option<Duration>,
    /// After the last message the stream stays open without a word until the client leaves.
    #[serde(default)]
    pub then_silent: bool,
    /// Bytes handed to clients so far, shared by every clone (what a test waits for).
    #[serde(skip)]
    pub sent: Arc<AtomicU64>,
}

impl Flood {
    /// Whether `call`'s stream is replaced.
    pub fn covers(&self, call: &str) -> bool {
        self.calls.iter().any(|c| c == call || c == "*")
    }

    /// Bytes handed to clients so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// The stream: as fast as the client reads, or paced by `every`.
    pub(crate) fn stream(&self) -> Stream_<common::Data> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let f = self.clone();
        tokio::spawn(async move {
            let mut sent = 0u64;
            while f.count.is_none_or(|n| sent < n) {
                if let Some(p) = f.every {
                    tokio::time::sleep(p).await;
                }
                let d = common::Data {
                    metadata: None,
                    bytes: f.chunk.clone().into_bytes(),
                };
                if tx.send(Ok::<_, Status>(d)).await.is_err() {
                    return;
                }
                sent += 1;
                f.sent.fetch_add(f.chunk.len() as u64, Ordering::Relaxed);
            }
            if f.then_silent {
                tx.closed().await;
            }
        });
        Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_read_from_a_fault_file() {
        let f: crate::net::faults::Faults = serde_yaml_ng::from_str(
            "flood: {calls: [Read], chunk: \"data\\n\", count: 15, every: 200ms, then_silent: false}\n",
        )
        .unwrap();
        let flood = f.flood("Read").unwrap();
        assert_eq!(
            (flood.chunk.as_str(), flood.count, flood.every),
            ("data\n", Some(15), Some(Duration::from_millis(200)))
        );
        assert!(f.flood("Logs").is_none());
        let err = serde_yaml_ng::from_str::<crate::net::faults::Faults>(
            "flood: {calls: [Read], chunk: x, every: soon}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("flood.every: the delay \"soon\" is not a duration"),
            "{err}"
        );
    }
}
