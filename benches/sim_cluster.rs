//! The sim bench's cluster run: the simulated nodes made one cluster through the real CLI (the
//! cozystack preset; the first node the control plane, the others workers), bootstrapped, and
//! waited for until the Kubernetes API lists every node Ready, so the simulator holds each
//! node's config, its COSI resources and its Kubernetes objects (the Node, its DaemonSet pods)
//! when it is measured.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use talm::talos::client::{Client, Options};
use talm::talos::creds::Auth;

/// Node files the workers are split into, applied this many at once (`apply --parallel`).
const FILES: usize = 32;
/// How long the cluster may take to list every node Ready once bootstrapped.
const READY_WITHIN: Duration = Duration::from_secs(600);
/// How long the Node list must stay the same, every Node Ready, to count as settled.
const SETTLED: Duration = Duration::from_secs(20);

/// Runs `talm ARGS` in `dir`; its stdout, or the failure with what it said.
pub fn talm(talm: &str, dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(talm)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("talm {}: {e}", args.join(" ")))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(format!(
        "talm {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

fn modeline(nodes: &[String], endpoint: &str, template: &str) -> String {
    let quoted: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "# talm: nodes=[{}], endpoints=[\"{endpoint}\"], templates=[\"{template}\"]\n",
        quoted.join(",")
    )
}

/// How long each step of the bring-up took.
pub struct Steps {
    pub apply: Duration,
    pub ready: Duration,
    /// The Nodes Kubernetes lists, all Ready (fewer than the nodes when hostnames collide).
    pub nodes: usize,
}

/// Makes `addrs` one cluster in `dir` (a new project) and waits until Kubernetes lists every
/// node Ready. The talosconfig and kubeconfig are left in `dir`.
pub fn bring_up(talm_bin: &str, dir: &Path, addrs: &[String]) -> Result<Steps, String> {
    let run = |args: &[&str]| talm(talm_bin, dir, args);
    let cp = &addrs[0];
    run(&[
        "init",
        "--preset",
        "cozystack",
        "--name",
        "bench",
        "--endpoints",
        cp,
    ])?;
    let write = |name: &str, text: String| {
        std::fs::write(dir.join("nodes").join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write(
        "cp.yaml",
        modeline(&addrs[..1], cp, "templates/controlplane.yaml"),
    )?;
    let workers = &addrs[1..];
    let per_file = workers.len().div_ceil(FILES).max(1);
    let mut apply: Vec<String> = vec!["apply".into(), "-i".into()];
    for (k, chunk) in workers.chunks(per_file).enumerate() {
        let name = format!("workers-{k:02}.yaml");
        write(&name, modeline(chunk, cp, "templates/worker.yaml"))?;
        apply.extend(["-f".into(), format!("nodes/{name}")]);
    }
    let started = Instant::now();
    run(&["apply", "-i", "-f", "nodes/cp.yaml"])?;
    if !workers.is_empty() {
        apply.extend(["--parallel".into(), FILES.to_string()]);
        let args: Vec<&str> = apply.iter().map(String::as_str).collect();
        run(&args)?;
    }
    let applied = started.elapsed();
    // The control plane installs and reboots: bootstrap once it answers with its certificate.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match run(&["bootstrap", "-f", "nodes/cp.yaml"]) {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
    run(&["kubeconfig", "-f", "nodes/cp.yaml"])?;
    let kubeconfig =
        std::fs::read_to_string(dir.join("kubeconfig")).map_err(|e| format!("kubeconfig: {e}"))?;
    let waited = Instant::now();
    let deadline = waited + READY_WITHIN;
    // Nodes are named by hostname, and the simulator's default hostnames (`talos-` and five
    // hex digits of the node's identity) collide at this scale, as random ones would: the
    // wait ends when every node is Ready or, short of that, when every Node listed is Ready
    // and no more have come for a while.
    let (mut listed, mut ready, mut grew) = (0, 0, Instant::now());
    loop {
        let counts = talm::talos::block_on(async {
            let cluster = talm::talos::k8s::Cluster::connect(&kubeconfig, None).await?;
            let nodes = cluster.nodes().await?;
            let ready = nodes
                .iter()
                .filter(|n| talm::talos::k8s::is_ready(n))
                .count();
            Ok::<_, anyhow::Error>((nodes.len(), ready))
        });
        if let Ok((l, r)) = counts {
            if l > listed {
                grew = Instant::now();
            }
            (listed, ready) = (l, r);
        }
        let settled = ready == listed && grew.elapsed() > SETTLED;
        if ready == addrs.len() || (listed > 0 && settled) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the Kubernetes API lists {ready} Ready node(s) of {} after {READY_WITHIN:?}",
                addrs.len()
            ));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok(Steps {
        apply: applied,
        ready: waited.elapsed(),
        nodes: listed,
    })
}

/// The talosconfig's credentials, for Version over mTLS.
pub fn auth(dir: &Path) -> Auth {
    talm::talos::creds::load_context(&dir.join("talosconfig"), "")
        .expect("the project's talosconfig")
        .auth
}

/// One Version call to a configured node over mTLS.
pub async fn version(addr: String, auth: Auth) -> Result<Duration, String> {
    let started = Instant::now();
    let opts = Options {
        auth,
        timeout: Duration::from_secs(10),
    };
    let client = Client::connect(&addr, None, &opts)
        .await
        .map_err(|e| format!("{addr}: {e:#}"))?;
    let v = client
        .version()
        .await
        .map_err(|e| format!("{addr}: {e:#}"))?;
    if v.version.is_none() {
        return Err(format!("{addr}: a Version reply without a version"));
    }
    Ok(started.elapsed())
}
