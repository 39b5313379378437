//! etcd and cluster health from scripts: node methods for every `talm etcd` command
//! (`etcd_members`, `etcd_status`, `etcd_snapshot`, `etcd_remove_member`, `etcd_leave`,
//! `etcd_forfeit_leadership`, `etcd_defrag`, `etcd_alarms`, `etcd_disarm`, `etcd_downgrade`),
//! the recovery upload and bootstrap (`etcd_recover`, `bootstrap(#{recover})`), the snapshot
//! figures of a local file (`etcd_snapshot_info`), and the health check as data (`n.health()`,
//! `cluster_health(#{...})`): one map per check with its last state.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map};

use crate::error::{hinted, local_write, Left};
use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::opts::TargetsOpts;
use crate::runtime::node::Node;
use crate::runtime::opts::options;
use crate::runtime::session::Session;
use crate::talos::block_on;
use crate::talos::client::EtcdDowngrade;
use talm_wire::snapshot;

options! {
    /// `n.health(#{...})`.
    pub struct HealthOpts for "n.health" {
        /// How long the checks may take (default 20m).
        wait_timeout: Option<Duration>,
        control_plane_nodes: Vec<String>,
        worker_nodes: Vec<String>,
        /// Counted as a control plane.
        init_node: String,
        /// Print each progress line on stderr as it arrives.
        progress: bool,
    }
}

options! {
    /// `cluster_health(#{...})`: the node (one) as `talos::targets` finds it, and the checks.
    pub struct ClusterHealthOpts for "cluster_health" {
        nodes: Vec<String>,
        endpoints: Vec<String>,
        files: Vec<String>,
        insecure: bool,
        talosconfig: String,
        context: String,
        timeout: Option<Duration>,
        wait_timeout: Option<Duration>,
        control_plane_nodes: Vec<String>,
        worker_nodes: Vec<String>,
        init_node: String,
        progress: bool,
    }
}

options! {
    /// `n.bootstrap(#{...})`.
    pub struct BootstrapOpts for "n.bootstrap" {
        /// Restore etcd from the snapshot uploaded with `n.etcd_recover(path)`.
        recover: bool,
        /// Restore without checking the snapshot's SHA-256 trailer.
        skip_hash_check: bool,
    }
}

fn hex(id: u64) -> String {
    format!("{id:016x}")
}

fn strings(v: Vec<String>) -> Dynamic {
    v.into_iter().map(Dynamic::from).collect::<Array>().into()
}

fn members(n: &Node) -> Result<Array> {
    let list = n.with(|c| block_on(c.etcd_members(true)))?;
    Ok(list
        .into_iter()
        .map(|m| {
            let mut r = Map::new();
            r.insert("node".into(), n.name.clone().into());
            r.insert("id".into(), hex(m.id).into());
            r.insert("hostname".into(), m.hostname.into());
            r.insert("peer_urls".into(), strings(m.peer_urls));
            r.insert("client_urls".into(), strings(m.client_urls));
            r.insert("learner".into(), m.is_learner.into());
            Dynamic::from(r)
        })
        .collect())
}

fn status(n: &Node) -> Result<Map> {
    let s = n.with(|c| block_on(c.etcd_status()))?;
    let mut r = Map::new();
    r.insert("node".into(), n.name.clone().into());
    r.insert("member".into(), hex(s.member_id).into());
    r.insert("db_size".into(), s.db_size.into());
    r.insert("db_size_in_use".into(), s.db_size_in_use.into());
    r.insert("leader".into(), hex(s.leader).into());
    r.insert("raft_index".into(), (s.raft_index as i64).into());
    r.insert("raft_term".into(), (s.raft_term as i64).into());
    r.insert(
        "raft_applied_index".into(),
        (s.raft_applied_index as i64).into(),
    );
    r.insert("learner".into(), s.is_learner.into());
    r.insert("protocol_version".into(), s.protocol_version.into());
    r.insert("storage_version".into(), s.storage_version.into());
    r.insert("errors".into(), strings(s.errors));
    Ok(r)
}

fn alarms(n: &Node, list: Vec<machine::EtcdMemberAlarm>) -> Array {
    list.into_iter()
        .map(|a| {
            let name = machine::etcd_member_alarm::AlarmType::try_from(a.alarm)
                .map(|t| t.as_str_name().to_string())
                .unwrap_or_else(|_| a.alarm.to_string());
            let mut r = Map::new();
            r.insert("node".into(), n.name.clone().into());
            r.insert("member".into(), hex(a.member_id).into());
            r.insert("alarm".into(), name.into());
            Dynamic::from(r)
        })
        .collect()
}

/// A file the command line named (outputs and inputs alike), or one inside the project.
pub(crate) fn allowed(session: &Session, path: &str, what: &str) -> Result<PathBuf> {
    session.named_or_inside(
        what,
        path,
        "scripts reach local files only where the user said: the command's own argument (talm etcd snapshot PATH, talm bootstrap --recover-from FILE) or the project folder",
    )
}

fn info_map(i: &snapshot::Info) -> Map {
    let mut r = Map::new();
    r.insert("hash".into(), format!("{:08x}", i.hash).into());
    r.insert("revision".into(), i.revision.into());
    r.insert("total_keys".into(), (i.total_keys as i64).into());
    r.insert("total_size".into(), (i.total_size as i64).into());
    r
}

/// Streams the snapshot into `<path>.part` (0600), syncs, checks the length rule, renames. A
/// local write that fails names the node, the path and the OS error, and says the partial file
/// is removed.
fn snapshot_to(session: &Session, n: &Node, path: &str) -> Result<Map> {
    let dest = allowed(session, path, "n.etcd_snapshot")?;
    let part = PathBuf::from(format!("{}.part", dest.display()));
    // Paths as the user gave them, for messages.
    let (said, said_part) = (Path::new(path), PathBuf::from(format!("{path}.part")));
    let removed = Left::PartRemoved {
        part: &said_part,
        dest: said,
    };
    let unwritten =
        |at: &Path, e: &std::io::Error, left| local_write(&n.name, "etcd snapshot", at, e, left);
    // Removed on every way out: an error, a panic, or SIGINT/SIGTERM/SIGHUP mid-stream.
    let guard = crate::runtime::scratch::Guard::new(part.clone());
    let written = (|| -> Result<u64> {
        let mut f = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&part)
                .map_err(|e| unwritten(&said_part, &e, Left::NothingSaved { dest: said }))?
        };
        // No etcd database is larger than etcd's largest quota: an endless stream is cut there.
        let quota = crate::input::Kind::Snapshot.limit();
        let mut received = 0u64;
        // The first local write that failed: it, not the call it ended, is what to report.
        let mut failed: Option<std::io::Error> = None;
        let streamed = n.with(|c| {
            block_on(c.etcd_snapshot(|b| {
                received += b.len() as u64;
                if received > quota {
                    return Err(hinted(
                        format!("the snapshot stream passed {} GiB, etcd's largest quota: it is no etcd database", quota >> 30),
                        "check the node: a real etcd snapshot is at most the size of its database",
                    ));
                }
                f.write_all(b).map_err(|e| {
                    let stop = anyhow!("error writing snapshot: {e}");
                    failed = Some(e);
                    stop
                })
            }))
        });
        if let Some(e) = failed {
            return Err(unwritten(&said_part, &e, removed));
        }
        streamed.map_err(|e| match talm_base::error::node::go(&e) {
            Some(_) => super::inspect::read_failed(e),
            None => anyhow!("error reading: {e:#}"),
        })?;
        f.sync_all()
            .map_err(|e| unwritten(&said_part, &e, removed))?;
        let size = f.metadata()?.len();
        drop(f);
        let bytes = std::fs::read(&part)?;
        snapshot::check_length(&bytes).map_err(|e| {
            hinted(
                format!(
                    "node {}: the snapshot the node sent is no etcd snapshot: {e}; nothing was saved to {path:?}",
                    n.name
                ),
                "check etcd on the node (`talm etcd status`, `talm service etcd`), then take the snapshot again",
            )
        })?;
        std::fs::rename(&part, &dest).map_err(|e| unwritten(said, &e, removed))?;
        Ok(size)
    })();
    drop(guard);
    let size = written?;
    // The file is saved: a database whose figures cannot be read is kept, with a warning.
    let mut r = match std::fs::read(&dest)
        .map_err(anyhow::Error::from)
        .and_then(|b| snapshot::info(&b))
    {
        Ok(i) => info_map(&i),
        Err(e) => {
            let mut r = Map::new();
            r.insert(
                "warning".into(),
                format!("snapshot info of {path:?} is unavailable: {e:#} (the file is kept)")
                    .into(),
            );
            r
        }
    };
    r.insert("path".into(), path.into());
    r.insert("size".into(), (size as i64).into());
    Ok(r)
}

fn read_snapshot(session: &Session, path: &str, what: &str) -> Result<Vec<u8>> {
    let file = allowed(session, path, what)?;
    crate::input::read(&file, crate::input::Kind::Snapshot).context("error opening snapshot file")
}

/// The figures of a snapshot, refused with the file named when it is no etcd bbolt database.
fn checked_info(path: &str, bytes: &[u8]) -> Result<snapshot::Info> {
    snapshot::info(bytes).map_err(|e| {
        hinted(
            format!("snapshot {path:?} is not a valid etcd database: {e:#}"),
            "give a file saved by `talm etcd snapshot` (or etcdctl snapshot save), or a copy of etcd's member/snap/db with --recover-skip-hash-check",
        )
    })
}

/// Uploads a snapshot for a recovering bootstrap; refused when its trailer does not match,
/// unless `skip_hash_check` (the node would fail to restore it).
fn recover(session: &Session, n: &Node, path: &str, skip_hash_check: bool) -> Result<()> {
    let bytes = read_snapshot(session, path, "n.etcd_recover")?;
    snapshot::verified(&bytes, skip_hash_check).map_err(|e| {
        hinted(
            format!("snapshot {path:?} is damaged: {e}"),
            "take a new one with `talm etcd snapshot`, or pass --recover-skip-hash-check for a copy of etcd's data directory (no trailer)",
        )
    })?;
    // Skipping the hash check skips only the hash: the database itself must open.
    checked_info(path, &bytes)?;
    n.with(|c| block_on(c.etcd_recover(&bytes)))
        .map_err(|e| anyhow!("error uploading snapshot: {e:#}"))
}

/// The progress lines of a health check as one map per check (its last state).
fn health(n: &Node, o: &HealthOpts) -> Result<Array> {
    crate::progress::stage(crate::progress::Stage::Health);
    let wait = o.wait_timeout.unwrap_or(Duration::from_secs(20 * 60));
    let mut cps = o.control_plane_nodes.clone();
    if !o.init_node.is_empty() {
        cps.push(o.init_node.clone());
    }
    let mut checks: Vec<Map> = Vec::new();
    let print = o.progress;
    // A check may wait for many minutes: Ctrl-C ends the wait at once (a roll then reports).
    let r = n.with(|c| {
        block_on(crate::sandbox::interrupt::or_interrupted(c.health_check(
            wait,
            cps.clone(),
            o.worker_nodes.clone(),
            |line| {
                if print {
                    crate::output::err(line);
                }
                let Some(rest) = line.strip_prefix("waiting for ") else {
                    return;
                };
                let Some((check, state)) = rest.split_once(": ") else {
                    return;
                };
                let mut m = Map::new();
                m.insert("node".into(), n.name.clone().into());
                m.insert("check".into(), check.into());
                m.insert("state".into(), state.into());
                m.insert("ok".into(), (state == "OK" || state == "SKIP").into());
                match checks.last_mut() {
                    Some(last)
                        if last.get("check").map(|c| c.to_string()) == Some(check.into()) =>
                    {
                        *last = m
                    }
                    _ => checks.push(m),
                }
            },
        )))
    });
    if let Err(e) = r {
        let text = crate::error::render(&e);
        if !text.contains("healthcheck error:") {
            return Err(e);
        }
        match checks.last_mut() {
            Some(last) => {
                last.insert("ok".into(), false.into());
                last.insert("error".into(), format!("{e:#}").into());
            }
            None => return Err(e),
        }
    }
    Ok(checks.into_iter().map(Dynamic::from).collect())
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("etcd_members")
        .with_comments(["/// The etcd members as the node's own etcd lists them: #{node, id (16 hex digits), hostname, peer_urls, client_urls, learner} each."])
        .register_into_engine(engine, |n: &mut Node| native(|| members(n)));
    FuncRegistration::new("etcd_status")
        .with_comments(["/// The node's etcd member status: #{node, member, db_size, db_size_in_use, leader, raft_index, raft_term, raft_applied_index, learner, protocol_version, storage_version, errors}; IDs in 16 hex digits."])
        .register_into_engine(engine, |n: &mut Node| native(|| status(n)));
    FuncRegistration::new("etcd_snapshot")
        .with_comments(["/// Streams a snapshot of the node's etcd to the local `path` (written as `path.part`, 0600, checked, then renamed): #{path, size, hash, revision, total_keys, total_size}, or #{path, size, warning} when the saved file's figures cannot be read."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, path: &str| native(|| snapshot_to(&session, n, path))
        });
    FuncRegistration::new("etcd_remove_member")
        .with_comments(["/// Removes the etcd member `id` (hex, as `etcd_members` gives it) through the node."])
        .register_into_engine(engine, |n: &mut Node, id: &str| {
            native(|| {
                let parsed = u64::from_str_radix(id.trim_start_matches("0x"), 16).map_err(|_| {
                    anyhow!("error parsing member ID: error parsing etcd member id: strconv.ParseUint: parsing {id:?}: invalid syntax")
                })?;
                n.with(|c| block_on(c.etcd_remove_member(parsed)))
            })
        });
    FuncRegistration::new("etcd_leave")
        .with_comments(["/// Makes the node's etcd member leave the cluster (its etcd stops, its data is removed)."])
        .register_into_engine(engine, |n: &mut Node| native(|| n.with(|c| block_on(c.etcd_leave()))));
    FuncRegistration::new("etcd_forfeit_leadership")
        .with_comments(["/// Moves etcd leadership away from the node: the new leader's name, \"\" when the node did not lead."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| n.with(|c| block_on(c.etcd_forfeit_leadership())))
        });
    FuncRegistration::new("etcd_defrag")
        .with_comments([
            "/// Defragments the node's etcd database (its size shrinks to what is in use).",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| n.with(|c| block_on(c.etcd_defragment())))
        });
    FuncRegistration::new("etcd_alarms")
        .with_comments([
            "/// The cluster's active etcd alarms: #{node, member, alarm (NOSPACE, CORRUPT)} each.",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let list = n.with(|c| block_on(c.etcd_alarms()))?;
                Ok(alarms(n, list))
            })
        });
    FuncRegistration::new("etcd_disarm")
        .with_comments([
            "/// Disarms every etcd alarm; the alarms that were disarmed, as `etcd_alarms`.",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let list = n.with(|c| block_on(c.etcd_disarm()))?;
                Ok(alarms(n, list))
            })
        });
    FuncRegistration::new("etcd_downgrade")
        .with_comments(["/// An etcd downgrade call: `action` is validate, enable (to `version`, MAJOR.MINOR) or cancel; the cluster version etcd reports."])
        .register_into_engine(engine, |n: &mut Node, action: &str, version: &str| {
            native(|| {
                let what = match action {
                    "validate" => EtcdDowngrade::Validate,
                    "enable" => EtcdDowngrade::Enable,
                    "cancel" => EtcdDowngrade::Cancel,
                    other => {
                        return Err(hinted(
                            format!("unknown downgrade action {other:?}"),
                            "use validate, enable or cancel",
                        ))
                    }
                };
                n.with(|c| block_on(c.etcd_downgrade(what, version)))
            })
        });
    FuncRegistration::new("etcd_recover")
        .with_comments(["/// Uploads the local snapshot `path` for `n.bootstrap(#{recover: true})`; a snapshot whose SHA-256 trailer does not match is refused unless `skip_hash_check`, one that is no etcd bbolt database always."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |n: &mut Node, path: &str, skip_hash_check: bool| {
                native(|| recover(&session, n, path, skip_hash_check))
            }
        });
    FuncRegistration::new("bootstrap")
        .with_comments(["/// Bootstraps etcd; with `recover: true` from the snapshot uploaded by `n.etcd_recover` (`skip_hash_check` as talosctl's --recover-skip-hash-check)."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| {
                let o = BootstrapOpts::read(&opts)?;
                let req = machine::BootstrapRequest {
                    recover_etcd: o.recover,
                    recover_skip_hash_check: o.skip_hash_check,
                };
                n.with(|c| block_on(c.bootstrap(req)))
            })
        });
    FuncRegistration::new("etcd_snapshot_info")
        .with_comments(["/// The figures of a local snapshot file as etcdutl reports them: #{hash (8 hex digits), revision, total_keys, total_size}."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |path: &str| {
                native(|| {
                    let bytes = read_snapshot(&session, path, "etcd_snapshot_info")?;
                    Ok(info_map(&checked_info(path, &bytes)?))
                })
            }
        });
    FuncRegistration::new("health")
        .with_comments(["/// Runs the cluster health check on the node (a control plane): one #{node, check, state, ok} per check reached, in order; a failed one also has `error` (talosctl's `healthcheck error: ...`). Options: wait_timeout (20m), control_plane_nodes, worker_nodes, init_node, progress (print the progress lines on stderr)."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| health(n, &HealthOpts::read(&opts)?))
        });
    FuncRegistration::new("health")
        .with_comments(["/// The cluster health check on the node with the defaults (20m, nodes discovered by the node)."])
        .register_into_engine(engine, |n: &mut Node| native(|| health(n, &HealthOpts::default())));
    FuncRegistration::new("cluster_health")
        .with_comments(["/// The cluster health check from the one node `talos::targets` finds for #{nodes, endpoints, files, insecure, talosconfig, context, timeout}, with `n.health`'s options."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |opts: Map| {
                native(|| {
                    let o = ClusterHealthOpts::read(&opts)?;
                    let t = TargetsOpts {
                        nodes: o.nodes,
                        endpoints: o.endpoints,
                        files: o.files,
                        insecure: o.insecure,
                        cert_fingerprints: Vec::new(),
                        talosconfig: o.talosconfig,
                        context: o.context,
                        timeout: o.timeout,
                    };
                    let targets = crate::runtime::node::targets(&session, &t)?;
                    if targets.len() != 1 {
                        return Err(hinted(
                            "command \"health\" is not supported with multiple nodes",
                            "check the cluster from one control plane: give one node",
                        ));
                    }
                    let n: Node = targets[0].clone().cast();
                    let h = HealthOpts {
                        wait_timeout: o.wait_timeout,
                        control_plane_nodes: o.control_plane_nodes,
                        worker_nodes: o.worker_nodes,
                        init_node: o.init_node,
                        progress: o.progress,
                    };
                    health(&n, &h)
                })
            }
        });
}
