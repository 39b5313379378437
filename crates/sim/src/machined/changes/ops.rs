//! Service start/stop/restart, container restarts, rollback and shutdown on a simulated node,
//! with Talos's permissions, refusals and texts; each change is recorded in the node's state
//! (seen by ServiceList), published as events and logged.

use tonic::Status;

use super::{Event, Service};
use crate::node::{denied, Node};
use crate::world::clock;

/// What `service ID start|stop|restart` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceOp {
    Start,
    Stop,
    Restart,
}

impl ServiceOp {
    fn verb(self) -> &'static str {
        match self {
            ServiceOp::Start => "start",
            ServiceOp::Stop => "stop",
            ServiceOp::Restart => "restart",
        }
    }
}

/// Admin or operator, as machined's table has it for these calls.
pub fn operator(roles: &[String]) -> Result<(), Status> {
    if roles.iter().any(|r| r == "os:admin" || r == "os:operator") {
        Ok(())
    } else {
        Err(denied())
    }
}

fn container_mode(node: &Node) -> Result<(), Status> {
    if node.spec.hardware.platform == "container" {
        return Err(Status::failed_precondition(
            "method is not supported in container mode",
        ));
    }
    Ok(())
}

/// A stable-looking PID for a service's new task.
fn pid(id: &str, at: f64) -> u64 {
    use sha2::Digest;
    let h = sha2::Sha256::digest(format!("{id}@{at}"));
    4000 + u64::from(u16::from_be_bytes([h[0], h[1]])) % 20000
}

impl Node {
    /// The state of service `id` now (this boot's API changes first), or None when the node
    /// has no such service.
    fn service_state(&self, id: &str) -> Option<&'static str> {
        let st = self.state();
        if let Some(c) = st.changes.services.get(id) {
            return Some(c.state);
        }
        if let Some((_, s)) = crate::node::services(&st)
            .into_iter()
            .find(|(s, _)| *s == id)
        {
            return Some(s);
        }
        let ext = id.strip_prefix("ext-")?;
        (st.config.is_some() && self.spec.hardware.extensions.iter().any(|e| e == ext))
            .then_some("Running")
    }

    /// Records state changes of service `id` and publishes them.
    fn service_events(&self, id: &str, events: Vec<(&'static str, String)>) {
        let mut at = clock::now();
        let mut st = self.state();
        let entry = st
            .changes
            .services
            .entry(id.to_string())
            .or_insert_with(|| Service {
                state: "Running",
                events: vec![],
            });
        let mut published = Vec::new();
        for (state, msg) in events {
            entry.state = state;
            entry.events.push(Event {
                msg: msg.clone(),
                state,
                at,
            });
            published.push((state, msg));
            at += 0.001;
        }
        drop(st);
        for (state, msg) in published {
            self.events.service(self.machine_id(), id, state, &msg, "");
            self.journal
                .talos(&format!("service[{id}]({state}): {msg}"));
        }
    }

    fn stop_events() -> Vec<(&'static str, String)> {
        vec![("Finished", "Service finished successfully".into())]
    }

    fn start_events(id: &str) -> Vec<(&'static str, String)> {
        let p = pid(id, clock::now());
        vec![
            ("Preparing", "Running pre stage".into()),
            ("Preparing", "Creating service runner".into()),
            (
                "Running",
                format!("Started task {id} (PID {p}) for container {id}"),
            ),
        ]
    }

    /// ServiceStart / ServiceStop / ServiceRestart: kubelet may be started and restarted,
    /// extension services all three; a running service started (or a stopped one stopped)
    /// is left as it is.
    pub fn service_op(&self, id: &str, op: ServiceOp, roles: &[String]) -> Result<String, Status> {
        operator(roles)?;
        let Some(state) = self.service_state(id) else {
            return Err(Status::unknown(format!("service {id:?} not defined")));
        };
        let running = !matches!(state, "Finished" | "Failed" | "Skipped");
        let ext = id.starts_with("ext-");
        let allowed = |op: ServiceOp| match op {
            ServiceOp::Start | ServiceOp::Restart => ext || id == "kubelet",
            ServiceOp::Stop => ext,
        };
        let refuse = |op: ServiceOp| {
            Status::unknown(format!(
                "service {id:?} doesn't support {} operation via API",
                op.verb()
            ))
        };
        let done = match op {
            ServiceOp::Start => "started",
            ServiceOp::Stop => "stopped",
            ServiceOp::Restart => "restarted",
        };
        let reply = format!("Service {id:?} {done}");
        match op {
            ServiceOp::Start | ServiceOp::Restart if !running => {
                if !allowed(ServiceOp::Start) {
                    return Err(refuse(ServiceOp::Start));
                }
                self.service_events(id, Self::start_events(id));
            }
            ServiceOp::Start => {}
            ServiceOp::Stop if !running => {}
            ServiceOp::Stop => {
                if !allowed(op) {
                    return Err(refuse(op));
                }
                self.service_events(id, Self::stop_events());
            }
            ServiceOp::Restart => {
                if !allowed(op) {
                    return Err(refuse(op));
                }
                let mut ev = Self::stop_events();
                ev.extend(Self::start_events(id));
                self.service_events(id, ev);
            }
        }
        Ok(reply)
    }

    /// Restart: SIGTERM to a system container (its service runner starts it again: the
    /// service shows the exit and the new task) or a stop of a CRI container (the kubelet
    /// recreates it).
    pub fn restart_container(&self, id: &str, cri: bool, exists: bool) -> Result<(), Status> {
        if !exists {
            return Err(Status::unknown(format!("container {id:?} not found")));
        }
        if cri {
            self.journal
                .service("kubelet", &format!("container {id} stopped, recreating it"));
            return Ok(());
        }
        let mut ev = vec![(
            "Waiting",
            format!("Error running Containerd(Containerd({id})), going to restart forever: task {id:?} failed: exit code 143"),
        )];
        ev.extend(Self::start_events(id));
        self.service_events(id, ev);
        Ok(())
    }

    /// Rollback: the other boot entry becomes the default and the node reboots into it.
    pub fn rollback(&self, roles: &[String]) -> Result<(), Status> {
        if !crate::node::is_admin(roles) {
            return Err(denied());
        }
        self.journal.talos("rollback via API received");
        container_mode(self)?;
        let mut st = self.state();
        if st.installed_disk.is_none() {
            return Err(Status::failed_precondition("system disk not found"));
        }
        let Some(previous) = st.changes.previous_version.clone() else {
            return Err(Status::unknown("previous UKI not found"));
        };
        st.pending_version = Some(previous);
        st.rebooting = true;
        drop(st);
        self.journal
            .talos("reverting to previous UKI (simulated boot entry)");
        self.events.sequence(self.machine_id(), "reboot", true, "");
        self.reboot_soon();
        Ok(())
    }

    /// Shutdown: the shutdown sequence runs on behalf of a new actor and the machine powers
    /// off; it answers nothing until it is powered on again.
    pub fn shutdown(&self, force: bool, roles: &[String]) -> Result<String, Status> {
        operator(roles)?;
        container_mode(self)?;
        let actor = crate::node::uuid();
        self.journal.talos(&format!(
            "shutdown via API received. actor id: {actor}, force: {force}"
        ));
        let m = self.machine_id();
        self.events.sequence(m, "shutdown", true, &actor);
        crate::machined::sequences::publish(
            self,
            &crate::machined::sequences::shutdown(force),
            &actor,
        );
        {
            let mut st = self.state();
            st.rebooting = true;
            st.changes.powered_off = true;
        }
        self.reboot_soon();
        Ok(actor)
    }
}
