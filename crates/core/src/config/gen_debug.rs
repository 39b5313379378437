//! `template --debug` / `apply --debug`: the `talosctl gen config` invocations that would make
//! the node's config from the render, one per generation (the first with placeholder name and
//! endpoint, the second with what the patches set), each followed by the patches it takes.

use anyhow::{Context, Result};

use super::assemble::{self, Base};
use super::generate::MachineType;
use super::patch;

/// The flags of the invocation besides name, endpoint and type, as the user configured them.
pub struct Invocation<'a> {
    /// The secrets bundle's path.
    pub with_secrets: &'a str,
    pub talos_version: &'a str,
    pub kubernetes_version: &'a str,
}

/// One generation's lines: the gen config command, then each patch after a `---` line.
fn phase(
    n: u8,
    (kind, name, endpoint): (MachineType, &str, &str),
    call: &Invocation<'_>,
    patches: &[String],
) -> String {
    let name = if name.is_empty() { "dummy" } else { name };
    let endpoint = if endpoint.is_empty() {
        "clusterEndpoint"
    } else {
        endpoint
    };
    let mut out = format!(
        "# DEBUG(phase {n}): talosctl gen config {name} {endpoint} -t {} --with-secrets={} --talos-version={} --kubernetes-version={} -o -\n",
        kind.as_str(),
        call.with_secrets,
        call.talos_version,
        call.kubernetes_version,
    );
    let flag = match kind {
        MachineType::ControlPlane => "--config-patch-control-plane",
        MachineType::Worker => "--config-patch-worker",
    };
    for p in patches {
        out.push_str(&format!(
            "\n---\n# DEBUG(phase {n}): {flag}=\n{}\n",
            p.trim_end_matches('\n')
        ));
    }
    out
}

/// Both generations for `rendered` (any text a render gives, empty included).
pub fn dump(rendered: &str, base: &Base<'_>, call: &Invocation<'_>) -> Result<String> {
    let parts = assemble::split(rendered)?;
    let patches = parts
        .patches
        .iter()
        .map(|p| patch::load_patch(p))
        .collect::<Result<Vec<_>>>()
        .context("loading the rendered patches")?;
    let (kind, name, endpoint) = assemble::identify(base, &patches)?;
    let mut out = phase(1, (MachineType::ControlPlane, "", ""), call, &parts.patches);
    out.push_str(&phase(2, (kind, &name, &endpoint), call, &parts.patches));
    Ok(out)
}
