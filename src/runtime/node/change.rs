//! Node methods that change nodes: services (`service_start`/`stop`/`restart`), container
//! restarts, rollback, shutdown, disk wipes, META, image pulls, the active machine config and
//! patching it, `wait_down`, and `edit_text` (a text through the user's editor). Option maps
//! are typed: an unknown key is an error.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map};

use crate::error::hinted;
use crate::proto::common::{ContainerDriver, ContainerdInstance, ContainerdNamespace};
use crate::proto::machine;
use crate::proto::storage::{block_device_wipe_descriptor::Method, BlockDeviceWipeDescriptor};
use crate::runtime::native;
use crate::runtime::node::{tracked, Node};
use crate::runtime::opts::options;
use crate::talos::block_on;
use crate::talos::client::{PullUpdate, ServiceAction};
use crate::talos::tracker::Goal;

options! {
    /// `n.restart(id, #{...})`.
    pub struct RestartOpts for "n.restart" {
        /// A Kubernetes container (k8s.io through the CRI) instead of a Talos one.
        kubernetes: bool,
    }
}

options! {
    /// `n.shutdown(#{...})`.
    pub struct ShutdownOpts for "n.shutdown" {
        /// Skip cordoning and draining the Kubernetes node.
        force: bool,
        /// Follow the shutdown until the node stops its services (talosctl's tracker).
        wait: bool,
        /// How long `wait` waits (default 30m).
        timeout: Option<Duration>,
        /// After a failed wait, print the node's kernel log (talosctl's `--debug`).
        kernel_log: bool,
    }
}

options! {
    /// `n.wipe_disk(devices, #{...})`.
    pub struct WipeOpts for "n.wipe_disk" {
        /// FAST (default: signatures only) or ZEROES.
        method: String,
        /// Remove a wiped partition from its disk's GPT.
        drop_partition: bool,
        skip_volume_check: bool,
        skip_secondary_check: bool,
    }
}

options! {
    /// `n.image_pull(ref, #{...})`.
    pub struct PullOpts for "n.image_pull" {
        /// cri (default), system or inmem.
        namespace: String,
    }
}

options! {
    /// `n.patch_config(patches, #{...})`.
    pub struct PatchOpts for "n.patch_config" {
        /// auto (default), no-reboot, reboot, staged or try.
        mode: crate::cli::values::ApplyMode,
        dry_run: bool,
        /// Try-mode rollback (default 1m).
        timeout: Option<Duration>,
    }
}

/// A META key as talosctl reads it: Go's `strconv.ParseUint(s, 0, 8)` (`12`, `0x0c`, `0o14`,
/// `0b1100`, `014`).
pub fn meta_key(s: &str) -> Result<u32> {
    let err = |why: &str| {
        hinted(
            format!("strconv.ParseUint: parsing {s:?}: {why}"),
            "META keys are 0 to 255 (0x00 to 0xff); 0x0c to 0x0e are free for users",
        )
    };
    let t = s.replace('_', "");
    let (digits, radix) = match t.get(..2).map(str::to_ascii_lowercase).as_deref() {
        Some("0x") => (&t[2..], 16),
        Some("0o") => (&t[2..], 8),
        Some("0b") => (&t[2..], 2),
        _ if t.len() > 1 && t.starts_with('0') => (&t[1..], 8),
        _ => (t.as_str(), 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(err("invalid syntax"));
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if v <= 255 => Ok(v as u32),
        _ => Err(err("value out of range")),
    }
}

fn int_key(k: i64) -> Result<u32> {
    u32::try_from(k).map_err(|_| {
        hinted(
            format!("META key {k} is not a uint8"),
            "META keys are 0 to 255 (0x00 to 0xff)",
        )
    })
}

pub(crate) fn containerd(namespace: &str) -> Result<ContainerdInstance> {
    let (driver, ns) = match namespace {
        "" | "cri" => (ContainerDriver::Cri, ContainerdNamespace::NsCri),
        "system" => (ContainerDriver::Cri, ContainerdNamespace::NsSystem),
        "inmem" => (ContainerDriver::Containerd, ContainerdNamespace::NsSystem),
        other => {
            return Err(hinted(
                format!("unsupported namespace {other:?}"),
                "use cri (Kubernetes images), system (etcd, kubelet, installer) or inmem",
            ))
        }
    };
    Ok(ContainerdInstance {
        driver: driver as i32,
        namespace: ns as i32,
    })
}

fn strings(a: Array, what: &str) -> Result<Vec<String>> {
    a.into_iter()
        .map(|d| {
            d.into_string()
                .map_err(|t| anyhow::anyhow!("{what} must be strings, not {t}"))
        })
        .collect()
}

fn wipe(n: &Node, devices: Vec<String>, o: &WipeOpts) -> Result<()> {
    let method = match o.method.as_str() {
        "" | "FAST" => Method::Fast,
        "ZEROES" => Method::Zeroes,
        other => {
            return Err(hinted(
                format!("invalid wipe method {other:?}"),
                "use FAST (signatures only) or ZEROES",
            ))
        }
    };
    if devices.is_empty() {
        return Err(hinted(
            "no device to wipe",
            "name devices without /dev/, e.g. sdb or vda5",
        ));
    }
    let descs = devices
        .into_iter()
        .map(|device| BlockDeviceWipeDescriptor {
            device,
            method: method as i32,
            skip_volume_check: o.skip_volume_check,
            drop_partition: o.drop_partition,
            skip_secondary_check: o.skip_secondary_check,
        })
        .collect();
    n.with(|c| block_on(c.wipe(descs)))
}

fn pull(n: &Node, reference: &str, o: &PullOpts) -> Result<Map> {
    let inst = containerd(&o.namespace)?;
    let updates = n.with(|c| block_on(c.image_pull(inst, reference)))?;
    let mut layers = Array::new();
    let mut name = String::new();
    for u in updates {
        match u {
            PullUpdate::Done(n) => name = n,
            PullUpdate::Layer(p) => {
                let pr = p.progress.unwrap_or_default();
                let status =
                    machine::image_service_pull_layer_progress::Status::try_from(pr.status)
                        .map(|s| s.as_str_name())
                        .unwrap_or("DOWNLOADING");
                let mut m = Map::new();
                m.insert("layer".into(), p.layer_id.into());
                m.insert("status".into(), status.into());
                m.insert("offset".into(), pr.offset.into());
                m.insert("total".into(), pr.total.into());
                layers.push(m.into());
            }
        }
    }
    let mut m = Map::new();
    m.insert("name".into(), name.into());
    m.insert("layers".into(), layers.into());
    Ok(m)
}

/// The node's active machine config (the `v1alpha1` MachineConfig), as text.
pub fn machine_config(n: &Node) -> Result<String> {
    let r = n.with(|c| block_on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1")))?;
    let Some(r) = r else {
        return Err(hinted(
            format!("node {}: no machine config", n.name),
            "the node is in maintenance mode: apply a config first (`talm apply -i`)",
        ));
    };
    let spec = r.spec.map(|s| s.yaml_spec).unwrap_or_default();
    let annotated = r
        .metadata
        .as_ref()
        .is_some_and(|m| !m.annotations.is_empty());
    if annotated {
        // The spec is a YAML string holding the whole multi-document config.
        return Ok(serde_yaml_ng::from_str::<String>(&spec)?);
    }
    Ok(spec)
}

/// Comment lines (`# ...`) at the top stripped, as talosctl compares configs.
fn without_leading_comments(text: &str) -> &str {
    let mut rest = text;
    while rest.starts_with("# ") || rest.starts_with("#\n") {
        rest = rest.split_once('\n').map_or("", |(_, r)| r);
    }
    rest
}

fn patch(n: &Node, texts: Vec<String>, o: &PatchOpts) -> Result<Map> {
    use crate::config::patch::{self, Patch};
    if texts.is_empty() {
        return Err(hinted(
            "either --patch or --patch-file should be defined",
            "give a patch inline (-p '{\"machine\": {...}}') or from a file (-p @patch.yaml)",
        ));
    }
    let mut patches: Vec<Patch> = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let p = patch::load_patch(t).map_err(|e| {
            hinted(
                format!("patch #{}: {e:#}", i + 1),
                "a patch is a strategic merge patch (YAML) or a JSON6902 patch (a list of ops)",
            )
        })?;
        match (patches.last_mut(), p) {
            (Some(Patch::Json(prev)), Patch::Json(ops)) => prev.extend(ops),
            (_, p) => patches.push(p),
        }
    }
    let current = machine_config(n)?;
    let patched = patch::apply(&current, &patches).map_err(|e| {
        hinted(
            format!("node {}: {e:#}", n.name),
            "check the patch against the node's config (`talm get machineconfig -o yaml`)",
        )
    })?;
    let changed =
        without_leading_comments(&patched).trim() != without_leading_comments(&current).trim();
    let apply = crate::runtime::node::apply::apply(
        n,
        &patched,
        &crate::runtime::node::opts::ApplyOpts {
            mode: o.mode,
            dry_run: o.dry_run,
            timeout: o.timeout,
            as_is: true,
        },
    );
    let mut m = match (apply, changed) {
        (Ok(m), _) => m,
        // talosctl applies first and reports nothing of an unchanged config, not even an error.
        (Err(_), false) => Map::new(),
        (Err(e), true) => return Err(e),
    };
    m.insert("changed".into(), changed.into());
    m.insert("config".into(), patched.into());
    Ok(m)
}

/// The editor talosctl runs: `$TALOS_EDITOR`, `$EDITOR`, then `$VISUAL`; None for the default.
fn editor_env() -> Option<String> {
    ["TALOS_EDITOR", "EDITOR", "VISUAL"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
}

/// Writes `text` to a scratch file named `<prefix>*.yaml` (in the project's staging folder,
/// else the system temp folder; `scratch`), opens the editor on it, and returns what was saved.
fn edit_text(root: Option<&std::path::Path>, text: &str, prefix: &str) -> Result<String> {
    let editor = editor_env();
    if editor.is_none() && !std::io::stdin().is_terminal() {
        return Err(hinted(
            "talm edit requires an interactive terminal; stdin is not a tty",
            "run it from a terminal, or set EDITOR to a program that edits the file without one",
        ));
    }
    let editor = editor.unwrap_or_else(|| if cfg!(windows) { "notepad" } else { "vi" }.into());
    let safe: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let nonce: String = crate::secrets::pki::random_bytes::<6>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let scratch =
        crate::runtime::scratch::Scratch::create(root, &format!("{safe}{nonce}.yaml"), text)?;
    let path = scratch.path();
    let status = if cfg!(windows) {
        std::process::Command::new(&editor).arg(path).status()
    } else {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(path)
            .status()
    };
    let result = match status {
        Ok(s) if s.success() => crate::input::read_text(path, crate::input::Kind::Text),
        Ok(s) => Err(hinted(
            format!("editor {editor:?} failed: {s}"),
            "set TALOS_EDITOR or EDITOR to a working editor",
        )),
        Err(e) => Err(hinted(
            format!("cannot run the editor {editor:?}: {e}"),
            "set TALOS_EDITOR or EDITOR to a working editor",
        )),
    };
    drop(scratch);
    result
}

/// Polls until the node's answer to Version (on a new connection) is `want`, or `limit` passes.
fn wait_answer(n: &Node, want: bool, limit: Duration) -> Result<bool, Box<rhai::EvalAltResult>> {
    let deadline = std::time::Instant::now().checked_add(limit);
    loop {
        let answers = {
            let fresh = n.fresh();
            fresh.with(|c| block_on(c.version())).is_ok()
        };
        if answers == want {
            return Ok(true);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(false);
        }
        crate::sandbox::sleep(Duration::from_millis(250))?;
    }
}

fn service(n: &Node, id: &str, action: ServiceAction) -> Result<String> {
    n.with(|c| block_on(c.service_action(id, action)))
}

pub fn register(engine: &mut Engine, session: &crate::runtime::session::Session) {
    for (name, action, doc) in [
        ("service_start", ServiceAction::Start, "/// Starts a service (kubelet, extension services `ext-*`); a running one is left as it is. Returns the node's answer (`Service \"ID\" started`)."),
        ("service_stop", ServiceAction::Stop, "/// Stops a service (extension services `ext-*` only); a stopped one is left as it is. Returns the node's answer."),
        ("service_restart", ServiceAction::Restart, "/// Restarts a service (kubelet, `ext-*`; a stopped one is started). Returns the node's answer."),
    ] {
        FuncRegistration::new(name)
            .with_comments([doc])
            .register_into_engine(engine, move |n: &mut Node, id: &str| {
                native(|| service(n, id, action))
            });
    }
    FuncRegistration::new("restart")
        .with_comments(["/// Restarts a Talos container (apid, trustd, kubelet, etcd...): it is killed and its service starts it again."])
        .register_into_engine(engine, |n: &mut Node, id: &str| {
            native(|| n.with(|c| block_on(c.restart(id, false))))
        });
    FuncRegistration::new("restart")
        .with_comments(["/// Restarts a container; `opts.kubernetes` names one of the k8s.io namespace (the ID `containers -k` shows; the kubelet recreates it)."])
        .register_into_engine(engine, |n: &mut Node, id: &str, opts: Map| {
            native(|| {
                let o = RestartOpts::read(&opts)?;
                n.with(|c| block_on(c.restart(id, o.kubernetes)))
            })
        });
    FuncRegistration::new("rollback")
        .with_comments(["/// Boots the node into its previous Talos (the other boot entry); fails when there is none."])
        .register_into_engine(engine, |n: &mut Node| native(|| n.with(|c| block_on(c.rollback()))));
    FuncRegistration::new("shutdown")
        .with_comments(["/// Powers the node off (cordon and drain first unless `opts.force`); `opts.wait` follows it with talosctl's tracker until the services stop (`opts.timeout`, default 30m). Returns the shutdown's actor ID."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| {
                let o = ShutdownOpts::read(&opts)?;
                if !o.wait {
                    return n.with(|c| block_on(c.shutdown(o.force)));
                }
                tracked::refuse_insecure(n)?;
                let goal = Goal::ServicesStopped { then_back: false };
                let force = o.force;
                let how = tracked::Follow::new(goal, o.timeout, o.kernel_log);
                tracked::follow(n, how, move |c| async move { c.shutdown(force).await })
            })
        });
    FuncRegistration::new("shutdown")
        .with_comments([
            "/// Powers the node off after cordoning and draining it. Returns the actor ID.",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| n.with(|c| block_on(c.shutdown(false))))
        });
    for (name, want, doc) in [
        ("wait_down", false, "/// Waits up to `seconds` until the node stops answering (after a shutdown or a reset); false on timeout."),
        ("wait_answering", true, "/// Waits up to `seconds` until this handle's Version call succeeds on a new connection: with an insecure handle, until the node is in maintenance mode (after a reset); false on timeout."),
    ] {
        FuncRegistration::new(name)
            .with_comments([doc])
            .register_into_engine(engine, move |n: &mut Node, seconds: i64| {
                let limit = native(|| {
                    talm_base::duration::checked(
                        "seconds",
                        &seconds.to_string(),
                        talm_base::duration::from_seconds(seconds as f64),
                        talm_base::duration::Zero::Allowed,
                    )
                })?;
                wait_answer(n, want, limit)
            });
    }
    FuncRegistration::new("wipe_disk")
        .with_comments(["/// Wipes block devices (names without /dev/: `sdb`, `vda5`): `opts` has `method` (FAST or ZEROES), `drop_partition`. Devices used by a volume (the system disk) are refused, as Talos does; all are checked before any is wiped."])
        .register_into_engine(engine, |n: &mut Node, devices: Array, opts: Map| {
            native(|| wipe(n, strings(devices, "devices")?, &WipeOpts::read(&opts)?))
        });
    FuncRegistration::new("meta_write")
        .with_comments(["/// Writes a META tag: `key` 0-255 (a number, or text such as \"0x0c\"), `value` its text."])
        .register_into_engine(engine, |n: &mut Node, key: i64, value: &str| {
            native(|| {
                let k = int_key(key)?;
                n.with(|c| block_on(c.meta_write(k, value.as_bytes().to_vec())))
            })
        });
    FuncRegistration::new("meta_write")
        .with_comments(["/// Writes a META tag, the key as text (`12`, `0x0c`, `0o14`, `0b1100`)."])
        .register_into_engine(engine, |n: &mut Node, key: &str, value: &str| {
            native(|| {
                let k = meta_key(key)?;
                n.with(|c| block_on(c.meta_write(k, value.as_bytes().to_vec())))
            })
        });
    FuncRegistration::new("meta_delete")
        .with_comments(["/// Deletes a META tag (a number 0-255); NotFound when there is none."])
        .register_into_engine(engine, |n: &mut Node, key: i64| {
            native(|| {
                let k = int_key(key)?;
                n.with(|c| block_on(c.meta_delete(k)))
            })
        });
    FuncRegistration::new("meta_delete")
        .with_comments(["/// Deletes a META tag, the key as text (`0x0c`)."])
        .register_into_engine(engine, |n: &mut Node, key: &str| {
            native(|| {
                let k = meta_key(key)?;
                n.with(|c| block_on(c.meta_delete(k)))
            })
        });
    FuncRegistration::new("image_pull")
        .with_comments(["/// Pulls an image into the node's containerd (`opts.namespace`: cri, system or inmem). Returns #{name (pinned to its digest), layers: [#{layer, status, offset, total}]} (no layers when it was there)."])
        .register_into_engine(engine, |n: &mut Node, reference: &str, opts: Map| {
            native(|| pull(n, reference, &PullOpts::read(&opts)?))
        });
    FuncRegistration::new("image_remove")
        .with_comments(["/// Removes an image (its name as `image list` shows it) from the node's containerd (`opts.namespace`: cri, system or inmem)."])
        .register_into_engine(engine, |n: &mut Node, reference: &str, opts: Map| {
            native(|| {
                let inst = containerd(&PullOpts::read(&opts)?.namespace)?;
                n.with(|c| block_on(c.image_remove(inst, reference)))
            })
        });
    FuncRegistration::new("image_pull")
        .with_comments(["/// Pulls an image into the CRI namespace (Kubernetes images)."])
        .register_into_engine(engine, |n: &mut Node, reference: &str| {
            native(|| pull(n, reference, &PullOpts::default()))
        });
    FuncRegistration::new("machine_config")
        .with_comments(["/// The node's active machine config (all documents), as text."])
        .register_into_engine(engine, |n: &mut Node| native(|| machine_config(n)));
    FuncRegistration::new("patch_config")
        .with_comments(["/// Patches the node's active config and applies it: `patches` is a patch text or a list of them (strategic merge YAML or JSON6902 ops), `opts` has `mode`, `dry_run`, `timeout`. Returns #{changed, config, mode, mode_details, warnings}; an unchanged config is still sent, as talosctl does, and `changed` is false."])
        .register_into_engine(engine, |n: &mut Node, patches: Dynamic, opts: Map| {
            native(|| {
                let texts = match patches.clone().try_cast::<Array>() {
                    Some(a) => strings(a, "patches")?,
                    None => vec![patches.into_string().map_err(|t| anyhow::anyhow!("patches must be a string or a list of strings, not {t}"))?],
                };
                patch(n, texts, &PatchOpts::read(&opts)?)
            })
        });
    FuncRegistration::new("edit_text")
        .with_comments(["/// Opens `text` in the user's editor ($TALOS_EDITOR, $EDITOR, $VISUAL, else vi, which needs a terminal) in a temporary file named `prefix*.yaml`; returns the saved text."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |text: &str, prefix: &str| {
                native(|| edit_text(session.settings().root.as_deref(), text, prefix))
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_keys_parse_as_go_does() {
        assert_eq!(meta_key("12").unwrap(), 12);
        assert_eq!(meta_key("0x0c").unwrap(), 12);
        assert_eq!(meta_key("0o14").unwrap(), 12);
        assert_eq!(meta_key("014").unwrap(), 12);
        assert_eq!(meta_key("0b1100").unwrap(), 12);
        assert_eq!(
            meta_key("256").unwrap_err().to_string(),
            "strconv.ParseUint: parsing \"256\": value out of range"
        );
        assert_eq!(
            meta_key("zz").unwrap_err().to_string(),
            "strconv.ParseUint: parsing \"zz\": invalid syntax"
        );
    }

    #[test]
    fn leading_comments_are_ignored() {
        assert_eq!(without_leading_comments("# a\n# b\nx: 1\n"), "x: 1\n");
        assert_eq!(without_leading_comments("x: 1\n# c\n"), "x: 1\n# c\n");
    }
}
