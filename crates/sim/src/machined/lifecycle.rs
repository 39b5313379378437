//! LifecycleService on a simulated node, as Talos v1.13 serves it: Install and Upgrade run the
//! installer image from the node's containerd store and stream its output lines, then its exit
//! code. An upgrade only writes the new version to the disk: it runs after the next reboot.
//! Nodes older than v1.13 do not have the service.

use std::sync::atomic::Ordering;

use time::OffsetDateTime;
use tonic::Status;

use crate::machined::changes::images::normalize;
use crate::node::{denied, is_admin, Node};
use crate::world::images::{self, Store};
use talm_wire::proto::common::ContainerdInstance;
use talm_wire::version::image_tag;

/// What an installer run streams: its output lines, then its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub lines: Vec<String>,
    pub exit_code: i32,
}

/// Whether the node runs a Talos with the v1.13 APIs (LifecycleService, ImageService).
pub fn has_v1_13_apis(node: &Node) -> bool {
    let v = node.state().version.clone();
    talm_wire::contract::Contract::parse(&v).map_or(true, |c| c.newer_than(1, 12))
}

/// grpc-go's answer for a service the server does not register.
pub fn unknown_service(service: &str) -> Status {
    Status::unimplemented(format!("unknown service {service}"))
}

/// The installer's log line: Go's `log` default prefix (`2006/01/02 15:04:05 `).
fn logged(now: OffsetDateTime, text: &str) -> String {
    let f = time::macros::format_description!("[year]/[month]/[day] [hour]:[minute]:[second]");
    format!("{} {text}\n", now.format(&f).unwrap_or_default())
}

/// The checks both calls start with, in Talos's order.
fn prepare(node: &Node, roles: &[String]) -> Result<(), Status> {
    if !is_admin(roles) {
        return Err(denied());
    }
    if node.spec.hardware.platform == "container" {
        return Err(Status::failed_precondition(
            "method is not supported in container mode",
        ));
    }
    Ok(())
}

/// The installer run itself, after every check: the image must be in the store of `containerd`
/// (talosctl pulls it first).
fn run(
    node: &Node,
    containerd: Option<ContainerdInstance>,
    image: &str,
    host: &str,
    disk: &str,
    verb: &str,
) -> Result<Run, Status> {
    let store: Store = images::store(&containerd.unwrap_or_default())?;
    let missing = |detail: String| {
        Status::internal(format!(
            "{verb} failed: installer image {image:?} not found in containerd store: {detail}"
        ))
    };
    let name = normalize(image).map_err(|e| missing(e.message().to_string()))?;
    if !node.holds(store, &name) {
        return Err(missing(format!("image {name:?}: not found")));
    }
    let target = image_tag(image).unwrap_or_else(|| host.to_string());
    node.journal.talos(&format!(
        "starting {verb}: installer_image={image}, disk=/dev/{disk}"
    ));
    let now = OffsetDateTime::now_utc();
    let mut lines = vec![logged(now, &format!("running Talos installer {target}"))];
    if verb == "upgrade" {
        lines.extend([
            logged(now, "running pre-flight checks"),
            logged(now, &format!("host Talos version: {host}")),
            logged(now, "all pre-flight checks successful"),
        ]);
    }
    lines.push(logged(now, &format!("installation of {target} complete")));
    node.journal
        .talos(&format!("{verb} completed successfully: exit_code=0"));
    Ok(Run {
        lines,
        exit_code: 0,
    })
}

impl Node {
    /// LifecycleService.Upgrade: installs `image` to the system disk; the node boots it next.
    pub fn lifecycle_upgrade(
        &self,
        roles: &[String],
        containerd: Option<ContainerdInstance>,
        image: &str,
    ) -> Result<Run, Status> {
        prepare(self, roles)?;
        let image = image.trim();
        let _busy = Busy::take(self)?;
        let (disk, host) = {
            let st = self.state();
            (st.installed_disk.clone(), st.version.clone())
        };
        let Some(disk) = disk else {
            return Err(Status::failed_precondition("machine is not installed"));
        };
        if image.is_empty() {
            return Err(Status::invalid_argument("installer image name is required"));
        }
        let run = run(self, containerd, image, &host, &disk, "upgrade")?;
        if let Some(tag) = image_tag(image) {
            self.state().pending_version = Some(tag);
        }
        Ok(run)
    }

    /// LifecycleService.Install: installs `image` to `disk` on a machine not installed yet.
    pub fn lifecycle_install(
        &self,
        roles: &[String],
        containerd: Option<ContainerdInstance>,
        image: &str,
        disk: &str,
    ) -> Result<Run, Status> {
        prepare(self, roles)?;
        let image = image.trim();
        let _busy = Busy::take(self)?;
        let host = {
            let st = self.state();
            if st.installed_disk.is_some() {
                return Err(Status::already_exists("machine is already installed"));
            }
            st.version.clone()
        };
        if image.is_empty() {
            return Err(Status::invalid_argument("installer image name is required"));
        }
        if disk.is_empty() {
            return Err(Status::invalid_argument("destination disk is required"));
        }
        let name = disk.trim_start_matches("/dev/");
        if !self.spec.hardware.disks.iter().any(|d| d.name == name) {
            return Err(Status::invalid_argument(format!(
                "invalid disk path: lstat {disk}: no such file or directory"
            )));
        }
        let run = run(self, containerd, image, &host, name, "installation")?;
        let mut st = self.state();
        st.installed_disk = Some(name.to_string());
        if let Some(tag) = image_tag(image) {
            st.pending_version = Some(tag);
        }
        Ok(run)
    }
}

/// One installation or upgrade at a time, as Talos's service lock.
struct Busy<'a>(&'a Node);

impl<'a> Busy<'a> {
    fn take(node: &'a Node) -> Result<Busy<'a>, Status> {
        if node.installing.swap(true, Ordering::SeqCst) {
            return Err(Status::failed_precondition(
                "another installation/upgrade is already in progress",
            ));
        }
        Ok(Busy(node))
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.installing.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_carry_gos_log_stamp() {
        let t = time::macros::datetime!(2026-12-06 05:04:03 UTC);
        assert_eq!(
            logged(t, "running pre-flight checks"),
            "2026/12/06 05:04:03 running pre-flight checks\n"
        );
    }
}
