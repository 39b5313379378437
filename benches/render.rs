//! Render throughput of the cozystack preset and what each step of a render costs, then the
//! whole `talm template --offline` process against `talm --version`. Run:
//! `cargo bench --bench render`.
//!
//! Rows (issue 12): node configs/s in-process through `pipeline::render_anew` (the path of
//! `render()` / `render::template` when no render of the same inputs is kept), as a patch and as
//! the full config (`assemble::full`), on one thread and on both cores, for 64 nodes that differ
//! in address taken in turn (a fleet renders each node once: nothing kept by text may make a
//! repeated render look cheap; what a kept render and its key cost are step rows); then the steps
//! of one render measured alone; then the median wall and CPU time of 30 runs of each process
//! (CPU from `wait4`).
//!
//! `TALM_BENCH_CONTEXT=FILE` renders with FILE as the library's `_context.rhai` (to compare
//! two versions of the preset logic in alternating runs of one build),
//! `TALM_BENCH_STEPS_ONLY=1` prints the steps only, `TALM_BENCH_ROWS_ONLY=1` the throughput
//! rows only (to profile them), and `TALM_BENCH_LANES=1` makes every render
//! share one copy of the compiled Rhai code (`sandbox::lanes`) as before lanes.

// The process row reads a child's CPU time, not its peak memory.
#[allow(dead_code)]
mod common;

/// Measured on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use talm::config::assemble;
use talm::facts::Facts;
use talm::project::{confine, fsutil};
use talm::render::{cache, context, engine::Engine, pipeline, prepared, verify};
use talm::sandbox::{self, guard, Limits};
use talm::secrets::{bundle::Bundle, contract::Contract};

/// Runs `f` until `budget` has passed (at least 20 times); microseconds per call.
fn per_call<T>(budget: Duration, mut f: impl FnMut() -> T) -> f64 {
    let start = Instant::now();
    let mut n = 0u32;
    while n < 20 || start.elapsed() < budget {
        std::hint::black_box(f());
        n += 1;
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

/// Distinct nodes the throughput rows render in turn.
const NODES: usize = 64;

fn write_project(root: &Path) {
    // A cozystack project as `talm init` writes it (files only; no secrets needed).
    for (rel, content) in talm::project::presets::stamped_preset("cozystack", "bench", "0.1.0")
        .into_iter()
        .chain(talm::project::presets::vendored_library("0.1.0"))
    {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_project(root);
    if let Ok(f) = std::env::var("TALM_BENCH_CONTEXT") {
        std::fs::copy(f, root.join("charts/talm/templates/_context.rhai")).unwrap();
    }
    // A fleet renders each node once: 64 nodes that differ in address (and so in the rendered
    // text), taken in turn, so nothing kept by text (parsed streams, project files) is reused
    // from one render of a node to the next as it would be by rendering one node over again.
    let golden = include_str!("../tests/fixtures/talm-golden/facts.yaml");
    let fleet: Vec<Arc<Facts>> = (0..NODES)
        .map(|i| {
            let text = golden.replace("192.168.201.10", &format!("192.168.201.{}", 10 + i));
            Arc::new(Facts::parse(&text, "facts.yaml").unwrap())
        })
        .collect();
    let bundle = Bundle::load(
        include_str!("../tests/fixtures/talos/stability/secrets.yaml"),
        "secrets.yaml",
    )
    .unwrap();
    let mut values: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root.join("values.yaml")).unwrap())
            .unwrap();
    values["endpoint"] = "https://10.0.0.1:6443".into();
    let request = |template: &str, facts: &Arc<Facts>| pipeline::Request {
        root,
        templates: vec![template.to_string()],
        facts: facts.clone(),
        values: values.clone(),
        chart_name: "bench".into(),
        chart_version: "0.1.0".into(),
        talos_version: "v1.12".into(),
        kubernetes_version: "1.34.3".into(),
    };
    let base = assemble::Base {
        contract: Contract::parse("v1.12").unwrap(),
        kubernetes_version: "1.34.3",
        bundle: &bundle,
    };
    // The render cache trusts a file's stamp once it is older than `cache::SETTLE` (before
    // that it compares contents); a project is not edited while a fleet renders.
    std::thread::sleep(cache::SETTLE + Duration::from_millis(100));
    if let Some(n) = std::env::var("TALM_BENCH_LANES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        sandbox::lanes::RENDERS.set_limit(n);
    }

    // What a lane's copy of the compiled code costs: the resident set after a render on the
    // first lane, then after one on a second (another thread, while this one holds the first).
    let lane_cost = {
        let rss = || {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            let pages: f64 = statm.split(' ').nth(1).unwrap().parse().unwrap();
            pages * 4096.0 / (1 << 20) as f64
        };
        pipeline::render_anew(&request("templates/controlplane.yaml", &fleet[0])).unwrap();
        let one = rss();
        sandbox::lanes::with_lane(|_| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    pipeline::render_anew(&request("templates/controlplane.yaml", &fleet[1]))
                })
                .join()
                .unwrap()
                .unwrap()
            })
        });
        rss() - one
    };
    // Render `n` node configs on `threads` threads, the nodes taken in turn.
    let run = |n: usize, full: bool, threads: usize| -> f64 {
        let start = Instant::now();
        std::thread::scope(|s| {
            for k in 0..threads {
                let (request, fleet, base) = (&request, &fleet, &base);
                // As a playbook's `parallel()` workers: a roomy stack, so renders run on the
                // thread itself rather than on a render thread it hands them to.
                let worker = std::thread::Builder::new().stack_size(2 * guard::STACK);
                let spawned = worker.spawn_scoped(s, move || {
                    guard::roomy_stack(2 * guard::STACK);
                    for i in (k..n).step_by(threads) {
                        let t = if i % 2 == 0 {
                            "templates/controlplane.yaml"
                        } else {
                            "templates/worker.yaml"
                        };
                        let out =
                            pipeline::render_anew(&request(t, &fleet[(i / 2) % NODES])).unwrap();
                        let out = if full {
                            assemble::full(&out, base).unwrap()
                        } else {
                            out
                        };
                        std::hint::black_box(out);
                    }
                });
                spawned.unwrap();
            }
        });
        start.elapsed().as_secs_f64()
    };
    println!("render throughput, cozystack preset, {NODES} distinct nodes in turn:");
    let steps_only = std::env::var("TALM_BENCH_STEPS_ONLY").is_ok();
    for threads in if steps_only { vec![] } else { vec![1, 2] } {
        for (label, full) in [("patch", false), ("full config", true)] {
            let n = if full { 2000 } else { 5000 };
            let secs = run(n, full, threads);
            let rate = n as f64 / secs;
            let goal = if full { 2000.0 } else { 5000.0 };
            let on = if threads == 1 {
                "one thread"
            } else {
                "both cores"
            };
            println!(
                "  {label:<12} {on:<10} {n} renders in {secs:.3} s: {rate:.0} node configs/s ({:.3} ms each; goal >= {goal:.0}/s: {})",
                secs * 1e3 / n as f64,
                if rate >= goal { "met" } else { "MISSED" }
            );
        }
    }

    println!("  resident memory a second lane (its own compiled copy) added: {lane_cost:.1} MiB");
    if std::env::var("TALM_BENCH_ROWS_ONLY").is_ok() {
        return;
    }
    steps(root, &fleet, &values, &base);
    if steps_only {
        return;
    }
    process_row();
}

/// Each step of one render, measured alone (µs per call).
fn steps(
    root: &Path,
    fleet: &[Arc<Facts>],
    values: &serde_yaml_ng::Value,
    base: &assemble::Base<'_>,
) {
    let facts = &fleet[0];
    let budget = Duration::from_millis(300);
    let row = |what: &str, us: f64| println!("  {what:<58} {us:>9.1} µs");
    println!("steps of one render (controlplane.yaml), each alone:");
    let read_all = || {
        let mut out = Vec::new();
        for (prefix, d) in [("", "templates"), ("talm/", "charts/talm/templates")] {
            for (rel, path) in fsutil::files_below(&root.join(d)).unwrap() {
                out.push((
                    format!("{prefix}{rel}"),
                    confine::read_text(root, &path).unwrap(),
                ));
            }
        }
        out
    };
    let files = read_all();
    let tera_sources: Vec<(&str, &str)> = files
        .iter()
        .filter(|(n, _)| !n.ends_with(".rhai"))
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let context_src = &files
        .iter()
        .find(|(n, _)| n == "talm/_context.rhai")
        .unwrap()
        .1;
    let walk = per_call(budget, read_all);
    let tera = per_call(budget, || Engine::new(tera_sources.clone()).unwrap());
    let rhai_engine = per_call(budget, || sandbox::engine(&Limits::TEMPLATE));
    let engine = sandbox::engine(&Limits::TEMPLATE);
    let rhai_compile = per_call(budget, || {
        sandbox::compile(&engine, "templates/_context.rhai", context_src).unwrap()
    });
    let stat = per_call(budget, || cache::load(root).unwrap());
    let compiled = cache::load(root).unwrap();
    let templates = compiled.tera().unwrap();
    let script = compiled.context.as_ref().unwrap();
    let args = serde_json::json!({
        "values": values,
        "chart": {"name": "bench", "version": "0.1.0"},
        "talos": {"version": "v1.12", "multidoc": true},
        "kubernetes_version": "1.34.3",
        "template": "controlplane.yaml",
    });
    let run = per_call(budget, || context::run(script, facts, &args).unwrap());
    let to_rhai = per_call(budget, || rhai::serde::to_dynamic(&args).unwrap());
    let mut ctx = args.clone();
    ctx["node"] = context::run(script, facts, &args).unwrap();
    let tera_ctx = tera::Context::from_serialize(&ctx).unwrap();
    let render = per_call(budget, || {
        templates
            .render("controlplane.yaml", tera_ctx.clone(), facts)
            .unwrap()
    });
    // The checks read one output per node in turn, as a fleet does (a kept parse of the same
    // text is not what a node's render costs).
    let outs: Vec<String> = fleet
        .iter()
        .map(|f| {
            let mut ctx = args.clone();
            ctx["node"] = context::run(script, f, &args).unwrap();
            let ctx = tera::Context::from_serialize(&ctx).unwrap();
            templates.render("controlplane.yaml", ctx, f).unwrap()
        })
        .collect();
    let mut turn = 0usize;
    let mut next_out = || {
        turn += 1;
        &outs[turn % outs.len()]
    };
    let pooled = per_call(budget, || {
        guard::watched("b", &Limits::TEMPLATE, || 1).unwrap()
    });
    let itself = std::thread::Builder::new()
        .stack_size(2 * guard::STACK)
        .spawn(move || {
            guard::roomy_stack(2 * guard::STACK);
            per_call(budget, || {
                guard::watched("b", &Limits::TEMPLATE, || 1).unwrap()
            })
        })
        .unwrap()
        .join()
        .unwrap();
    let spawn = per_call(budget, || {
        std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(|| 1)
            .unwrap()
            .join()
            .unwrap()
    });
    let rss = per_call(budget, guard::resident_kib);
    let prepared = prepared::of(values).unwrap();
    let facts_json = per_call(budget, || serde_json::to_value(&**facts).unwrap());
    let check = per_call(budget, || {
        verify::check(
            "templates/controlplane.yaml",
            next_out(),
            &[&prepared.risky, facts.risky()],
        )
        .unwrap()
    });
    let parse = per_call(budget, || {
        let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(next_out())
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        docs
    });
    let full = per_call(budget, || assemble::full(next_out(), base).unwrap());
    let facts_digest = per_call(budget, || {
        talm::caches::digest::digest(|h| {
            facts.node.hash(h);
            facts.version.hash(h);
            facts.resources.hash(h);
        })
    });
    let kept_request = pipeline::Request {
        root,
        templates: vec!["templates/controlplane.yaml".into()],
        facts: facts.clone(),
        values: values.clone(),
        chart_name: "bench".into(),
        chart_version: "0.1.0".into(),
        talos_version: "v1.12".into(),
        kubernetes_version: "1.34.0".into(),
    };
    pipeline::render(&kept_request).unwrap();
    let kept_render = per_call(budget, || pipeline::render(&kept_request).unwrap());
    row("walk + read the template folders", walk);
    row("Tera: parse + compile every template", tera);
    row("Rhai: build a sandbox engine", rhai_engine);
    row("Rhai: compile _context.rhai", rhai_compile);
    row("cache: list + stat the template files (a hit)", stat);
    row("_context.rhai run (compiled, incl. ARGS conversion)", run);
    row("  of which ARGS (values, ...) to Rhai", to_rhai);
    row("Tera render of controlplane.yaml (watched)", render);
    row(
        "  of which guard::watched on a roomy thread (itself)",
        itself,
    );
    row("  or handed to a kept render thread", pooled);
    row("  before: a 16 MiB-stack thread per render", spawn);
    row("  a read of /proc/self/status (memory bound)", rss);
    row(
        "facts to JSON (before: every render; now once per facts)",
        facts_json,
    );
    row("verify::check", check);
    row(
        "  a parse of the output alone (serde_yaml_ng, nothing kept)",
        parse,
    );
    row("assemble::full (full: true)", full);
    row(
        "digest of a node's facts (once per facts: kept renders' key)",
        facts_digest,
    );
    row(
        "a kept render (the same inputs again: apply after template)",
        kept_render,
    );
    let before = walk + tera + rhai_engine + rhai_compile + run + render + spawn - pooled
        + facts_json
        + check;
    let now = stat + run + render + check;
    println!(
        "  patch render, sum of its steps: before {before:.0} µs ({:.0}/s), now {now:.0} µs ({:.0}/s)",
        1e6 / before,
        1e6 / now
    );
}

/// Median wall and CPU time (ms) of each of `lines` (talm's arguments), run `runs` times in
/// `cwd`, taking turns: this machine's speed drifts by a third within minutes, and a ratio of
/// two sets of runs taken one after the other measured the drift as much as the commands.
fn processes<const N: usize>(cwd: &Path, lines: [&[&str]; N], runs: usize) -> [(f64, f64); N] {
    let mut times: [(Vec<f64>, Vec<f64>); N] = std::array::from_fn(|_| (Vec::new(), Vec::new()));
    for _ in 0..runs {
        for (args, (wall, cpu)) in lines.iter().zip(times.iter_mut()) {
            let (w, c) = process(cwd, args);
            wall.push(w);
            cpu.push(c);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    times.map(|(mut wall, mut cpu)| (median(&mut wall), median(&mut cpu)))
}

/// Wall and CPU time (ms) of one run of talm with `args` in `cwd`.
// The child is reaped by `wait4` (which also gives its CPU time), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn process(cwd: &Path, args: &[&str]) -> (f64, f64) {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let usage = common::wait_usage(&child);
    let wall = start.elapsed().as_secs_f64() * 1e3;
    assert!(usage.ok, "talm {args:?} failed");
    (wall, usage.cpu.as_secs_f64() * 1e3)
}

/// `talm template --offline` in a project made by `talm init`, against `talm --version`.
fn process_row() {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_path_buf();
    std::fs::write(
        root.join("secrets.yaml"),
        include_str!("../tests/fixtures/talos/stability/secrets.yaml"),
    )
    .unwrap();
    let init = Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["init", "--preset", "cozystack", "--name", "bench"])
        .args(["--endpoints", "127.0.0.11"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(init.status.success(), "talm init: {init:?}");
    // Offline there is no discovered subnet: the cluster's is set, as a user would.
    let values = std::fs::read_to_string(root.join("values.yaml")).unwrap();
    let values = values.replace(
        "\nadvertisedSubnets: []",
        "\nadvertisedSubnets: [10.0.0.0/8]",
    );
    std::fs::write(root.join("values.yaml"), values).unwrap();
    let runs = 60;
    let template = ["template", "--offline", "-t", "templates/controlplane.yaml"];
    let [(tw, tc), (vw, vc)] = processes(&root, [&template, &["--version"]], runs);
    println!("whole process, median of {runs} runs of each, taking turns:");
    println!("  talm --version                                  {vw:6.2} ms wall {vc:6.2} ms CPU");
    println!(
        "  talm template --offline -t templates/controlplane.yaml {tw:6.2} ms wall {tc:6.2} ms CPU"
    );
    let ratio = tw / vw;
    println!(
        "  ratio (wall) {ratio:.2}x, CPU {:.2}x; goal <= 2.5x: {}",
        tc / vc.max(0.01),
        if ratio <= 2.5 { "met" } else { "MISSED" }
    );
}
