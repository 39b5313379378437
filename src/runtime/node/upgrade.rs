//! Upgrading nodes from scripts: `n.upgrade(#{image, stage, force, preserve, reboot_mode, wait,
//! timeout, legacy, no_reboot, namespace})` as talosctl v1.13 does it, and
//! `nodefile::sync_install_image(file, image)`, the writeback of the new image into a node file
//! (node by node: `fleet::writeback`).
//!
//! A node with LifecycleService (Talos >1.13.0-alpha.2) pulls the installer image
//! (ImageService.Pull), runs it (LifecycleService.Upgrade, its output printed as
//! `<node>: <line>`) and then reboots, followed by the tracker unless `wait` is off. Older nodes,
//! and `legacy`, take the legacy `MachineService/Upgrade`, which honours stage, force and
//! preserve, followed by the tracker when `wait`.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use rhai::{Engine, FuncRegistration, Map, Module};

use crate::error::hinted;
use crate::project::install_image;
use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::change::containerd;
use crate::runtime::node::opts::UpgradeOpts;
use crate::runtime::node::{tracked, Node};
use crate::runtime::session::Session;
use crate::talos::block_on;
use crate::talos::client::{Install, PullUpdate};
use crate::talos::tracker::Goal;
use talm_base::output;

/// The path an upgrade took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Lifecycle,
    Legacy,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Lifecycle => "lifecycle",
            Path::Legacy => "legacy",
        }
    }
}

/// Whether talosctl v1.13 takes the LifecycleService path for a node running `tag`: its
/// version range `>1.13.0-alpha.2 <2.0.0`.
pub(crate) fn has_lifecycle(tag: &str) -> bool {
    let t = tag.trim_start_matches('v');
    let (core, pre) = t.split_once('-').unwrap_or((t, ""));
    let n: Vec<u64> = core.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    let (major, minor, patch) = (n.first().copied(), n.get(1).copied(), n.get(2).copied());
    match (major, minor.unwrap_or(0), patch.unwrap_or(0)) {
        (Some(1), m, _) if m > 13 => true,
        (Some(1), 13, p) if p > 0 || pre.is_empty() => true,
        (Some(1), 13, 0) => pre_after_alpha_2(pre),
        _ => false,
    }
}

/// Semver precedence of a 1.13.0 pre-release against `alpha.2`.
fn pre_after_alpha_2(pre: &str) -> bool {
    let mut ids = pre.split('.');
    match ids.next() {
        Some("alpha") => ids
            .next()
            .is_some_and(|n| n.parse::<u64>().map_or(true, |n| n > 2)),
        Some(word) => word > "alpha",
        None => true,
    }
}

fn request(o: &UpgradeOpts) -> Result<machine::UpgradeRequest> {
    if o.image.trim().is_empty() {
        return Err(hinted(
            "n.upgrade: no image given",
            "pass #{image: \"ghcr.io/siderolabs/installer:vX.Y.Z\"}",
        ));
    }
    Ok(machine::UpgradeRequest {
        image: o.image.clone(),
        preserve: o.preserve,
        stage: o.stage,
        force: o.force,
        reboot_mode: machine::upgrade_request::RebootMode::from(o.reboot_mode) as i32,
    })
}

fn reply(path: Path, ack: String, actor: String) -> Map {
    let mut m = Map::new();
    m.insert("path".into(), path.name().into());
    m.insert("ack".into(), ack.into());
    m.insert("actor_id".into(), actor.into());
    m
}

fn upgrade(n: &Node, o: &UpgradeOpts) -> Result<Map> {
    crate::progress::stage(crate::progress::Stage::Upgrade);
    let req = request(o)?;
    if o.wait && n.insecure() {
        return tracked::refuse_insecure(n).map(|_| Map::new());
    }
    if o.legacy {
        return legacy(n, o, req);
    }
    let running = n.with(|c| block_on(c.version()))?;
    if !has_lifecycle(&running.version.unwrap_or_default().tag) {
        output::err("New upgrade API is not available, falling back to legacy");
        return legacy(n, o, req);
    }
    lifecycle(n, o, req)
}

/// Pull, install, reboot: talosctl's path for Talos v1.13 and later.
fn lifecycle(n: &Node, o: &UpgradeOpts, req: machine::UpgradeRequest) -> Result<Map> {
    let namespace = if o.namespace.is_empty() {
        "system"
    } else {
        &o.namespace
    };
    let inst = containerd(namespace)?;
    let pulled = n.with(|c| block_on(c.image_pull(inst, &req.image)))?;
    for u in pulled {
        if let PullUpdate::Done(name) = u {
            output::err(&format!("{}: pulled image {name}", n.name));
        }
    }
    // talosctl's plain reporter: each message as `<node>: <text>`, a repeat of the last skipped.
    let mut last = String::new();
    let mut exit = None;
    n.with(|c| {
        block_on(c.lifecycle_upgrade(inst, &req.image, |m| {
            if let Install::Exit(code) = m {
                exit = Some(*code);
            }
            let line = format!("{}: {}", n.name, m.text().trim());
            if line != last {
                output::err(&line);
                last = line;
            }
        }))
    })?;
    match exit {
        Some(0) => output::err(&format!("{}: upgrade completed", n.name)),
        Some(code) => {
            output::err(&format!("{}: upgrade failed with exit code {code}", n.name));
            return Err(hinted(
                format!(
                    "error during upgrade: node {}: upgrade failed with exit code {code}",
                    n.name
                ),
                "the installer's output above says why; the node still runs its old version",
            ));
        }
        None => {
            return Err(hinted(
                format!(
                    "error during upgrade: node {}: the installer ended without an exit code",
                    n.name
                ),
                "the node cut the stream; check `talm logs machined` before trying again",
            ))
        }
    }
    if o.no_reboot {
        return Ok(reply(Path::Lifecycle, String::new(), String::new()));
    }
    // talosctl drains the Kubernetes node between the install and the reboot (`--drain`, on by
    // default, implying --wait) and uncordons it once the node is back Ready.
    let drained = match o.drain {
        true => {
            // The new Talos is on the disk already: a stopped drain leaves it to the next boot.
            let pending = format!(
                "{} is installed and runs from the node's next reboot",
                req.image
            );
            let timeout = o.drain_timeout.unwrap_or(super::k8s::DRAIN_TIMEOUT);
            super::k8s::before_reboot(n, timeout, Some(&pending))?
        }
        false => None,
    };
    let mode = match o.reboot_mode {
        crate::cli::values::UpgradeRebootMode::Default => machine::reboot_request::Mode::Default,
        crate::cli::values::UpgradeRebootMode::Powercycle => {
            machine::reboot_request::Mode::Powercycle
        }
    };
    let reboot = machine::RebootRequest { mode: mode as i32 };
    if !o.wait && !o.drain {
        let r = n.with(|c| block_on(c.reboot(reboot)))?;
        return Ok(reply(Path::Lifecycle, String::new(), r.actor_id));
    }
    let how = tracked::Follow::new(Goal::Rebooted, o.timeout, o.kernel_log);
    let actor = tracked::follow(n, how, move |c| async move {
        Ok(c.reboot(reboot).await?.actor_id)
    })?;
    if let Some(d) = drained {
        d.after_reboot(o.timeout.unwrap_or(tracked::WAIT))?;
    }
    Ok(reply(Path::Lifecycle, String::new(), actor))
}

/// MachineService.Upgrade (removed in Talos 1.18), followed by the tracker when `wait`.
fn legacy(n: &Node, o: &UpgradeOpts, req: machine::UpgradeRequest) -> Result<Map> {
    if !o.wait {
        let r = n.with(|c| block_on(c.upgrade(req)))?;
        return Ok(reply(Path::Legacy, r.ack, r.actor_id));
    }
    let ack = Arc::new(Mutex::new(String::new()));
    let got = Arc::clone(&ack);
    let action = move |c: crate::talos::client::Client| async move {
        let r = c.upgrade(req).await?;
        *got.lock().unwrap_or_else(|e| e.into_inner()) = r.ack;
        Ok(r.actor_id)
    };
    let how = tracked::Follow::new(Goal::Rebooted, o.timeout, o.kernel_log);
    let actor = tracked::follow(n, how, action)?;
    let ack = ack.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(reply(Path::Legacy, ack, actor))
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("upgrade")
        .with_comments(["/// Upgrades Talos on the node as talosctl v1.13: on Talos v1.13 and later the installer image is pulled (`namespace`: system, cri or inmem), run by LifecycleService.Upgrade (its output printed) and the node rebooted (`reboot_mode`: default or powercycle; not with `no_reboot`); older nodes, or `legacy`, take MachineService.Upgrade, which also honours `stage`, `force` and `preserve`. `wait` follows the reboot until the node is back RUNNING on a new boot, printing talosctl's progress lines; `timeout` (default 30m). Returns #{path (lifecycle or legacy), ack, actor_id}."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| upgrade(n, &UpgradeOpts::read(&opts)?))
        });
    FuncRegistration::new("image_tag")
        .with_comments(["/// The tag of an image reference (`ghcr.io/siderolabs/installer:v1.13.9` gives `v1.13.9`, a digest after it ignored); \"\" when it has none."])
        .register_into_engine(engine, |image: &str| {
            talm_wire::version::image_tag(image).unwrap_or_default()
        });
    FuncRegistration::new("go_now")
        .with_comments(["/// The client's clock as Go's `time.Now().String()` prints it (UTC, with the monotonic `m=+…` reading since talm started), e.g. for talosctl's `STARTED` column."])
        .register_into_engine(engine, talm_base::humanize::go_now);
    let mut m = Module::new();
    FuncRegistration::new("sync_install_image")
        .with_comments(["/// Sets machine.install.image in a node file to `image`, changing only that value's text (comments, layout, other documents kept). Returns \"updated\", \"same\" or \"no-key\" (no document has the key)."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move |file: &str, image: &str| {
                native(|| {
                    let path = crate::runtime::fleet::writeback::rewritable(
                        &session,
                        "nodefile::sync_install_image",
                        file,
                    )?;
                    Ok(install_image::sync_file(&path, image)?.name().to_string())
                })
            }
        });
    crate::runtime::fleet::writeback::add(&mut m, session);
    engine.register_type_with_name::<crate::runtime::fleet::writeback::Writeback>("Writeback");
    engine.register_static_module("nodefile", m.into());
}

#[cfg(test)]
mod tests {
    use super::has_lifecycle;

    #[test]
    fn the_lifecycle_path_is_talosctls_version_range() {
        for (tag, want) in [
            ("v1.13.7", true),
            ("v1.13.0", true),
            ("v1.13.0-beta.1", true),
            ("v1.13.0-alpha.3", true),
            ("v1.13.0-alpha.2", false),
            ("v1.13.0-alpha.0", false),
            ("v1.14.1", true),
            ("v1.12.6", false),
            ("v2.0.0", false),
            ("", false),
        ] {
            assert_eq!(has_lifecycle(tag), want, "{tag}");
        }
    }
}
