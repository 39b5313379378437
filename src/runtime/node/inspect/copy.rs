//! `n.copy_to(path, dest)`: a node's tree unpacked into a local folder as `talosctl copy` does,
//! and each way it can fail named for what it is: the node refusing the call, a file this
//! machine cannot write, or an archive that does not unpack.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{anyhow, Result};

use crate::error::{hinted, local_write, Hinted, Left};
use crate::runtime::node::Node;
use crate::talos::block_on;
use crate::talos::errors::{Kind, NodeError};
use talm_wire::extract::Unwritten;

/// The unpacker ended, so the stream feeding it is stopped.
#[derive(Debug)]
struct UnpackerDone;

impl std::fmt::Display for UnpackerDone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the unpacker stopped reading")
    }
}

impl std::error::Error for UnpackerDone {}

/// `e`, when it is a local write that failed while copying `path` (`extract::Unwritten`), named
/// with the node, the path, the OS error and what was `left`.
fn written_locally(n: &Node, path: &str, e: anyhow::Error, left: Left<'_>) -> anyhow::Error {
    match e.chain().find_map(|c| c.downcast_ref::<Unwritten>()) {
        Some(u) => local_write(&n.name, &format!("copy {path}"), &u.path, &u.error, left),
        None => e,
    }
}

/// The node's answer to the Copy call, when it refused it before sending anything: a status of
/// its own (not a connection that failed or was cut, which is said as it is).
fn refusal(e: &anyhow::Error) -> Option<&NodeError> {
    let n = e.chain().find_map(|c| c.downcast_ref::<NodeError>())?;
    matches!(
        n.kind,
        Kind::Denied | Kind::MaintenanceUnimplemented | Kind::Status(_)
    )
    .then_some(n)
}

/// The node refused to copy `path`: its words, and that nothing came into `dest`.
fn refused(n: &Node, path: &str, dest: &Path, why: &NodeError) -> anyhow::Error {
    let mut hints = why.hints.clone();
    if hints.is_empty() {
        hints.push(if path.starts_with('/') {
            let parent = Path::new(path).parent().unwrap_or(Path::new("/"));
            format!(
                "check the path on the node: `talm list {}` shows what is there",
                parent.display()
            )
        } else {
            format!(
                "paths on the node start at its root: give /{}",
                path.trim_start_matches("./")
            )
        });
    }
    Hinted {
        message: format!(
            "node {}: the node refused to copy {path}: {}; nothing was copied into {}",
            n.name,
            why.said,
            dest.display()
        ),
        hints,
    }
    .into()
}

/// Unpacks the node's tree at `path` into the local folder `dest`, as `talosctl copy` does. An
/// archive that does not unpack ends the call at once, named as a damaged archive from the node;
/// a file that cannot be written here is named as such and removed; a call the node refused is
/// named with the node's words.
pub(super) fn copy_to(n: &Node, path: &str, dest: &Path) -> Result<()> {
    let dest = dest.to_path_buf();
    talm_wire::extract::prepare(&dest)
        .map_err(|e| written_locally(n, path, e, Left::NothingSaved { dest: &dest }))?;
    let (tx, reader) = talm_wire::extract::chunks();
    // Set when the archive does not unpack: the call ends then, not at the stream's end.
    let failed = std::sync::Arc::new(tokio::sync::Notify::new());
    let unpacking = {
        let dest = dest.clone();
        let failed = failed.clone();
        std::thread::spawn(move || {
            let r = talm_wire::extract::unpack(&dest, reader);
            if r.is_err() {
                failed.notify_one();
            }
            r
        })
    };
    // Whether the node sent anything: a failure before that is a refused call.
    let received = AtomicBool::new(false);
    let streamed = n.with(|c| {
        let failed = failed.clone();
        let tx = tx.clone();
        let received = &received;
        block_on(async move {
            let copying = c.copy(path, |b| {
                received.store(true, Ordering::Relaxed);
                // After the archive's end the rest is read (the node may report problems
                // after its data) and dropped.
                let _ = tx.send(b.to_vec());
                Ok(())
            });
            tokio::select! {
                r = copying => r,
                () = failed.notified() => Err(anyhow::Error::new(UnpackerDone)),
            }
        })
    });
    drop(tx);
    let unpacked = unpacking
        .join()
        .map_err(|_| anyhow!("the unpacking thread failed"))?;
    let stopped = |e: &anyhow::Error| e.chain().any(|c| c.is::<UnpackerDone>());
    match (unpacked, streamed) {
        (Err(e), _) if e.chain().any(|c| c.is::<Unwritten>()) => {
            Err(written_locally(n, path, e, Left::FileRemoved { into: &dest }))
        }
        // What the node said outweighs what its ended stream left unpackable.
        (_, Err(e)) if !stopped(&e) => match refusal(&e) {
            Some(why) if !received.load(Ordering::Relaxed) => Err(refused(n, path, &dest, why)),
            _ => Err(super::copy_failed(e)),
        },
        (Err(e), _) => Err(hinted(
            format!(
                "node {}: error copying: the archive the node sent does not unpack: {e:#}",
                n.name
            ),
            format!(
                "what was unpacked before it stays in {}; retry, or look at the node's files with `talm list {path}`",
                dest.display()
            ),
        )),
        (Ok(()), _) => Ok(()),
    }
}
