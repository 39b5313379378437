//! ApplyConfiguration on a simulated node, as Talos 1.13 handles it (talos-api.md §4.3):
//! validation, mode resolution (what applies without a reboot: `crate::machined::immediate`), dry-run
//! diffs, and what each mode does to the node's state.

use std::sync::Arc;
use std::time::Duration;

use tonic::Status;

use crate::node::state::Config;
use crate::node::{denied, is_admin, Node};
use talm_wire::proto::machine::{self, apply_configuration_request::Mode};

impl Node {
    /// ApplyConfiguration as Talos 1.13 handles it (talos-api.md §4.3).
    pub fn apply(
        self: &Arc<Self>,
        req: &machine::ApplyConfigurationRequest,
        roles: &[String],
    ) -> Result<machine::ApplyConfiguration, Status> {
        let keep_config = self.faults().keep_config;
        let mut st = self.state();
        if st.rebooting {
            return Err(Status::failed_precondition("configuration was already applied and node is rebooting, cannot apply more configuration changes until next reboot"));
        }
        let maintenance = st.in_maintenance();
        if !maintenance && !is_admin(roles) {
            return Err(denied());
        }
        let text = String::from_utf8(req.data.clone())
            .map_err(|_| Status::invalid_argument("the configuration is not UTF-8 text"))?;
        let docs = talm_wire::config::decode::decode_docs(&text)
            .map_err(|e| Status::invalid_argument(format!("{e:#}")))?;
        let cfg = Config::new(text, docs);
        if !cfg.has_v1alpha1() {
            return Err(Status::invalid_argument("the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?"));
        }
        let mut errs = Vec::new();
        if !["controlplane", "worker", "init"].contains(&cfg.machine_type().as_str()) {
            errs.push(format!("unknown machine type {:?}", cfg.machine_type()));
        }
        let (ca_crt, ca_key) = cfg.machine_ca();
        if ca_crt.is_empty() {
            errs.push("machine.ca.crt is required".to_string());
        }
        if cfg.is_control_plane() && ca_key.is_empty() {
            errs.push("machine.ca.key is required on control plane nodes".to_string());
        }
        let metal = self.spec.hardware.platform == "metal";
        if metal
            && st.installed_disk.is_none()
            && cfg.install_disk().is_empty()
            && !cfg.has_disk_selector()
        {
            errs.push("either install disk or diskSelector should be defined".to_string());
        }
        let disk = cfg.install_disk();
        if metal
            && st.installed_disk.is_none()
            && !disk.is_empty()
            && self.spec.hardware.disk_at(&disk).is_none()
        {
            errs.push(format!("install disk {disk:?} does not exist on the node"));
        }
        if !errs.is_empty() {
            return Err(Status::invalid_argument(talm_base::error::multierror(
                &errs,
            )));
        }
        let requested = Mode::try_from(req.mode).unwrap_or(Mode::Auto);
        let reboot_reason = st
            .config
            .as_ref()
            .and_then(|cur| crate::machined::immediate::reboot_reason(cur, &cfg));
        let (mode, details) = if maintenance {
            match requested {
                Mode::Staged => (
                    Mode::Staged,
                    "Staged configuration to be applied after the next reboot".to_string(),
                ),
                _ => (
                    Mode::NoReboot,
                    "Applied configuration without a reboot".to_string(),
                ),
            }
        } else {
            match requested {
                Mode::Try | Mode::NoReboot => {
                    if let Some(r) = &reboot_reason {
                        return Err(Status::invalid_argument(r.clone()));
                    }
                    (
                        requested,
                        "Applied configuration without a reboot".to_string(),
                    )
                }
                Mode::Staged => (
                    Mode::Staged,
                    "Staged configuration to be applied after the next reboot".to_string(),
                ),
                Mode::Reboot => (
                    Mode::Reboot,
                    "Applied configuration with a reboot".to_string(),
                ),
                Mode::Auto => match &reboot_reason {
                    Some(r) => (
                        Mode::Reboot,
                        format!("Applied configuration with a reboot: {r}"),
                    ),
                    None => (
                        Mode::NoReboot,
                        "Applied configuration without a reboot".to_string(),
                    ),
                },
            }
        };
        if req.dry_run {
            let plain = details.split(": ").next().unwrap_or(&details).to_string();
            let current = st.config.as_ref().map(Config::text).unwrap_or_default();
            let new = cfg.text();
            let diff = if current == new {
                "No changes.".to_string()
            } else {
                format!("Config diff:\n\n{}", unified_diff(&current, &new))
            };
            return Ok(machine::ApplyConfiguration {
                metadata: None,
                warnings: vec![],
                mode: mode as i32,
                mode_details: format!("Dry run summary:\n{plain} (skipped in dry-run).\n{diff}"),
            });
        }
        let logged = match requested {
            Mode::Auto => format!("auto({})", mode.as_str_name().to_lowercase()),
            m => m.as_str_name().to_lowercase(),
        };
        self.journal
            .talos(&format!("apply config request: mode {logged}"));
        let mut details = details;
        if maintenance {
            if metal && st.installed_disk.is_none() {
                let hw = &self.spec.hardware;
                let chosen = hw.disk_at(&disk).or_else(|| hw.install_disks().next());
                st.installed_disk = chosen.map(|d| d.name.clone());
            }
            if mode == Mode::Staged {
                st.staged = Some(cfg);
            } else {
                st.set_config(Some(cfg));
                st.rebooting = true;
                drop(st);
                self.reboot_soon();
            }
        } else {
            match mode {
                Mode::Staged => st.staged = Some(cfg),
                Mode::Reboot => {
                    st.set_config(Some(cfg));
                    st.rebooting = true;
                    drop(st);
                    self.reboot_soon();
                }
                Mode::Try => {
                    let timeout = req
                        .try_mode_timeout
                        .as_ref()
                        .map(|d| {
                            Duration::from_secs(d.seconds.max(0) as u64)
                                + Duration::from_nanos(d.nanos.max(0) as u64)
                        })
                        .filter(|d| !d.is_zero())
                        .unwrap_or(Duration::from_secs(60));
                    let previous = st.config.clone();
                    st.set_config(Some(cfg));
                    let generation = st.config_version;
                    st.try_rollback = Some((generation, previous));
                    details.push_str(&format!(
                        "\nThe config is applied in 'try' mode and will be automatically reverted back in {}",
                        talm_base::duration::text(timeout)
                    ));
                    let node = Arc::clone(self);
                    tokio::spawn(async move {
                        tokio::time::sleep(timeout).await;
                        let mut st = node.state();
                        if let Some((g, prev)) = st.try_rollback.take() {
                            if g == st.config_version {
                                st.set_config(prev);
                            } else {
                                st.try_rollback = Some((g, prev));
                            }
                        }
                    });
                }
                _ => {
                    st.try_rollback = None;
                    if !keep_config {
                        st.set_config(Some(cfg));
                    }
                }
            }
        }
        Ok(machine::ApplyConfiguration {
            metadata: None,
            warnings: vec![],
            mode: mode as i32,
            mode_details: details,
        })
    }
}

/// A unified diff starting `--- a` / `+++ b`, as Talos prints dry-run diffs.
pub fn unified_diff(old: &str, new: &str) -> String {
    let patch = diffy::create_patch(old, new).to_string();
    let mut out = String::from("--- a\n+++ b\n");
    for line in patch.lines().skip(2) {
        out.push_str(line);
        out.push('\n');
    }
    out
}
