//! `n.pcap(#{...})`: a packet capture on one of the node's links, as talosctl's `pcap` makes
//! it: the pcap file written to a path (or raw to stdout with `-`), or each packet decoded to
//! stdout the way talosctl prints it. The capture runs until the node ends it or `duration`.

use std::io::Write;
use std::time::Duration;

use anyhow::{anyhow, Result};
use rhai::{Engine, FuncRegistration, Map};

use crate::error::hinted;
use crate::proto::machine::{BpfInstruction, PacketCaptureRequest};
use crate::runtime::native;
use crate::runtime::node::Node;
use crate::runtime::opts::options;
use crate::runtime::session::Session;
use crate::talos::block_on;
use talm_base::error::node::Kind;
use talm_base::pcap;

options! {
    /// `n.pcap(#{...})`.
    pub struct PcapOpts for "n.pcap" {
        /// The link to capture on.
        interface: String,
        promiscuous: bool,
        /// `tcpdump -dd` instructions, one per line.
        bpf_filter: String,
        /// How long to capture (default: until the node ends it).
        duration: Option<Duration>,
        /// "" decodes to stdout, "-" writes the raw file to stdout, else the file's path.
        output: String,
    }
}

/// talosctl's reading of `tcpdump -dd` lines: `{ 0x28, 0, 0, 0x0000000c },`.
fn bpf(text: &str) -> Result<Vec<BpfInstruction>> {
    let mut out = Vec::new();
    for line in text.trim().lines().filter(|l| !l.is_empty()) {
        let bad = || {
            hinted(
                format!("error parsing bpf instruction {line:?}: unexpected EOF"),
                "pass what `tcpdump -dd -y EN10MB 'EXPR'` prints",
            )
        };
        let inner = line
            .trim()
            .strip_prefix('{')
            .and_then(|l| l.strip_suffix("},"))
            .ok_or_else(bad)?;
        let f: Vec<&str> = inner.split(',').map(str::trim).collect();
        if f.len() != 4 {
            return Err(bad());
        }
        let hex = |s: &str| {
            s.strip_prefix("0x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
        };
        let (Some(op), Ok(jt), Ok(jf), Some(k)) =
            (hex(f[0]), f[1].parse(), f[2].parse(), hex(f[3]))
        else {
            return Err(bad());
        };
        out.push(BpfInstruction { op, jt, jf, k });
    }
    Ok(out)
}

/// The capture's bytes: until the node ends the stream, or `limit` passes (then what came).
fn capture(n: &Node, req: PacketCaptureRequest, limit: Option<Duration>) -> Result<Vec<u8>> {
    n.with(|c| {
        block_on(async {
            let mut stream = c.packet_capture_stream(req).await?;
            let mut file = Vec::new();
            let read = async {
                while let Some(chunk) = stream.next().await? {
                    file.extend(chunk);
                }
                Ok::<_, anyhow::Error>(())
            };
            match limit {
                None => read.await?,
                Some(l) => {
                    tokio::time::timeout(l, read).await.unwrap_or(Ok(()))?;
                }
            }
            Ok(file)
        })
    })
}

fn pcap_of(session: &Session, n: &Node, o: &PcapOpts) -> Result<()> {
    let req = PacketCaptureRequest {
        interface: o.interface.clone(),
        promiscuous: o.promiscuous,
        snap_len: 0,
        bpf_filter: bpf(&o.bpf_filter)?,
    };
    // talosctl's words: the call that could not start, else what reading the stream met, which
    // the decoder reports as it opens the file.
    let decode = o.output.is_empty();
    let file = capture(n, req, o.duration.filter(|d| !d.is_zero())).map_err(|e| {
        talm_base::error::node::reword(e, |go, kind| match kind {
            Kind::Refused => format!("error copying: {}", go.stream()),
            _ if decode => format!("error opening pcap reader: {}", go.stream()),
            _ => go.stream().to_string(),
        })
    })?;
    match o.output.as_str() {
        "" => {
            let (_, records) = pcap::records(&file).map_err(|e| anyhow!(e))?;
            let text: String = records.iter().map(|r| pcap::describe(r) + "\n").collect();
            crate::runtime::log::out(&text)
        }
        "-" => {
            let mut out = std::io::stdout().lock();
            out.write_all(&file)?;
            Ok(out.flush()?)
        }
        path => {
            let dest = crate::runtime::node::etcd::allowed(session, path, "n.pcap")?;
            // A whole capture or nothing: a file already there is replaced only once the new
            // one is written.
            crate::project::fsutil::write_atomic(&dest, &file, crate::project::fsutil::Mode::Public)
                .map_err(|e| anyhow!("open {path}: {e:#}"))
        }
    }
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("pcap")
        .with_comments(["/// Captures packets on one of the node's links as talosctl's `pcap`: `interface`, `promiscuous`, `bpf_filter` (`tcpdump -dd` lines), `duration` (default: until the node ends it), `output` (\"\": each packet decoded to stdout; \"-\": the raw pcap file to stdout; else a path the command line named)."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, opts: Map| native(|| pcap_of(&session, n, &PcapOpts::read(&opts)?))
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpf_lines_read_as_talosctl_reads_them() {
        let got = bpf("{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 8, 0x000086dd },\n").unwrap();
        assert_eq!(
            got,
            [
                BpfInstruction {
                    op: 0x28,
                    jt: 0,
                    jf: 0,
                    k: 12
                },
                BpfInstruction {
                    op: 0x15,
                    jt: 0,
                    jf: 8,
                    k: 0x86dd
                },
            ]
        );
        assert_eq!(
            bpf("tcp port 80").unwrap_err().to_string(),
            "error parsing bpf instruction \"tcp port 80\": unexpected EOF"
        );
    }
}
