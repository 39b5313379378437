//! Upgrading nodes from scripts: `n.upgrade(#{image, stage, force, preserve, reboot_mode, wait,
//! timeout})` (the legacy `MachineService/Upgrade`, which honours every flag, followed by
//! talosctl's action tracker when `wait`), and `nodefile::sync_install_image(file, image)`, the
//! writeback of the new image into a node file (node by node: `fleet::writeback`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use rhai::{Engine, FuncRegistration, Map, Module};

use crate::error::hinted;
use crate::project::install_image;
use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::opts::UpgradeOpts;
use crate::runtime::node::Node;
use crate::runtime::session::Session;
use crate::talos::{block_on, tracker};

/// talosctl's default `--timeout` of waiting commands.
const WAIT: Duration = Duration::from_secs(30 * 60);

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

fn upgrade(n: &Node, o: &UpgradeOpts) -> Result<Map> {
    crate::progress::stage(crate::progress::Stage::Upgrade);
    let req = request(o)?;
    let reply = |ack: String, actor: String| {
        let mut m = Map::new();
        m.insert("ack".into(), ack.into());
        m.insert("actor_id".into(), actor.into());
        m
    };
    if !o.wait {
        let r = n.with(|c| block_on(c.upgrade(req)))?;
        return Ok(reply(r.ack, r.actor_id));
    }
    if n.insecure() {
        return Err(hinted(
            "cannot use --wait and --insecure together",
            "a node in maintenance mode cannot be followed; pass --wait=false",
        ));
    }
    let ack = Arc::new(Mutex::new(String::new()));
    let got = Arc::clone(&ack);
    let action = move |c: crate::talos::client::Client| async move {
        let r = c.upgrade(req).await?;
        *got.lock().unwrap_or_else(|e| e.into_inner()) = r.ack;
        Ok(r.actor_id)
    };
    // Ctrl-C ends the wait (a roll reports where it stopped).
    let tracked = block_on(crate::sandbox::interrupt::or_interrupted(tracker::track(
        &n.name,
        n.dialer(),
        action,
        o.timeout.unwrap_or(WAIT),
        &mut tracker::Plain,
    )));
    n.forget();
    let actor = tracked?;
    let ack = ack.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(reply(ack, actor))
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("upgrade")
        .with_comments(["/// Upgrades Talos on the node: `opts` has `image` (required), `stage` (install during the next boot), `force` (skip the etcd checks), `preserve`, `reboot_mode` (default or powercycle), `wait` (follow it until the node is back RUNNING on a new boot, printing talosctl's progress lines), `timeout` (of the wait, default 30m). Returns #{ack, actor_id}."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| upgrade(n, &UpgradeOpts::read(&opts)?))
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
