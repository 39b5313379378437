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
//!
//! Measured on this machine (2 cores, release, one thread), step rows of this bench:
//!
//! | step of one patch render | before (main at 6619674) | kept compiled (66034ef) | tpl:: natives (44aeea8) | no interner (415bbe9) | mimalloc, LTO (now) |
//! |---|---|---|---|---|---|
//! | walk + read the template folders | 59 µs | — (list + stat: 20 µs) | — (19 µs) | — (18–33 µs) | — (28 µs) |
//! | Tera parse + compile of every template | 758 µs | — (once per project edit) | — | — | — |
//! | Rhai sandbox engine (stdlib modules cloned in) | 753 µs | — (once per process) | — | — | — |
//! | Rhai compile of `_context.rhai` | 1,462 µs | — (once per edit) | — | — | — |
//! | `_context.rhai` run | 818 µs | 818 µs | 352–654 µs | 360–630 µs | 455 µs |
//! | Tera render (watched) | ≈ 90 µs | 79 µs | 63–125 µs | 122–144 µs | 99 µs |
//! | of which the memory bound read | — | 14 µs (`/proc/self/status`) | 14 µs | 0.6–1 µs (`statm`, one descriptor) | 0.9 µs |
//! | facts to JSON + `verify::check` | 4 + 128 µs | 128 µs | 146–167 µs | 205–297 µs | 130–216 µs |
//! | total | ≈ 4,060 µs: 246/s (issue: 217–507/s) | ≈ 1,050 µs: 886/s | 826–1,050/s | 590–941/s one thread, 1,021–1,275/s both cores | 1,028–1,285/s one thread, 1,590–1,937/s both cores |
//!
//! The machine's speed varied by up to 40% between runs of one build in the last column (the
//! same `verify::check` took 205 µs in one run and 297 µs in the next). Two threads used to
//! render slower than one (669/s against 845/s at 4b27b26): every Rhai engine interned strings
//! behind one lock, and a thread finding it taken slept 10 ms; the sandbox engines intern none
//! now. `assemble::full` adds 2,165 µs per node at 66034ef and 981–1,949 µs at 415bbe9: 274–419
//! full configs/s on one thread, 537–595/s on both cores. The heap is mimalloc since a1ca9e8 and
//! the release build is optimised as a whole (LTO) since the commit after it: alone, mimalloc
//! without transparent huge pages rendered as fast as glibc on one thread (678–797/s against
//! 795–830/s in alternating runs) and 7–28% faster on both cores (1,377–1,470/s against
//! 1,147–1,288/s; full configs 704–724/s against 502–527/s); LTO added the rest of the last
//! column. Since 92990b4 only blocks up to 256 bytes come from mimalloc (larger ones from glibc,
//! for memory: `talm::heap`): 1,153/s patch on one thread, 1,597–1,728/s on both cores, full
//! configs 469–518/s and 716–725/s, the same as mimalloc alone within this machine's variance.
//! Since 0fefd88 the throughput rows render on threads with a roomy stack, as a playbook's
//! `parallel()` workers do, and such a thread renders the Tera template itself while the
//! watchdog thread watches it (`guard::watched`: 1 µs instead of a 15 µs hand-over, plus the
//! thread wake-ups); since c6680d9 `assemble::full` parses each rendered patch once (827 µs
//! before, 634–698 µs after). Alternating runs without LTO: 1,364–1,456/s patch on one thread
//! before the hand-over went, 1,640–1,717/s after; with LTO 1,647/s on one thread, 2,378/s on
//! both cores, full configs 715/s and 877/s. Two threads of one process render at 1.0–1.5 times
//! one thread's rate while two bench processes at once render at twice it, every step slowed
//! alike: most likely the cores contending for the reference counts of the shared compiled
//! preset logic and stdlib modules, which Rhai updates on every script call and string constant.
//! The process row: a one-shot `talm template` spent its first milliseconds on one core (the
//! standard package, then its own engine, then the project's templates, then the stdlib modules
//! at the preset logic's first import); since this change the command starts the package and
//! the stdlib modules, then the project's templates and preset logic, on other threads before it
//! checks the project, and its render waits for them: 14.0 against 13.6 ms (no LTO, alternating
//! runs), 12.8 with the stdlib started first, for somewhat more CPU in all (15–19 ms before,
//! 19–23 ms after under `perf stat`: three threads on two cores). The rest is CPU: about 14 ms of work on two cores,
//! a third of it page faults and relocations of the binary, a fifth the stdlib modules' parse.
//! Since this change the preset logic hands what the values alone decide (the extension keys
//! checked, the VIP set, the cluster name) to `once`, which keeps it by the values' content for
//! every later node; Sprig's `toString`/`int` and Go's printing of a value, which `talm/net`
//! called as script functions on every field, are `tpl::` natives; and a render trusts the
//! compiled project while inotify reports no change to its folders and files (a full check at
//! least once a second). Alternating runs of one build (no LTO, the machine in a slow hour),
//! the previous preset logic against this one (`TALM_BENCH_CONTEXT`): `_context.rhai` run
//! 400–612 µs against 318–525 µs (means of six runs 526 and 404 µs); patch renders 1,019–1,021/s
//! against 1,154–1,342/s on one thread, 1,536–1,599/s against 1,793–1,910/s on both cores; full
//! configs 445–512/s against 541–550/s on one thread. The cache hit (list + stat every template
//! file, 43–58 µs) is now a read of the inotify descriptor and two stats: 5–6 µs.
//! Since lanes (`sandbox::lanes`) renders at once no longer share the compiled Rhai code: each
//! runs on its own copy (stdlib modules, engine, preset logic; the row after the throughput
//! rows), the one its thread used last when free. Alternating runs of one build (no LTO),
//! `TALM_BENCH_LANES=1` against lanes, patches on both cores: with a standard package per lane
//! too (2.0 MiB a lane) 1,615–2,091/s (mean 1,766; 1.50–1.79 times one thread) against
//! 1,805–2,464/s (mean 2,190; 1.66–2.20 times), in a later hour means of 1,730 against 1,791;
//! with the standard package shared by all lanes (as now, 1.4 MiB a lane) 1,574–1,925/s
//! against 1,847–2,252/s. Full configs on both cores did not gain (means 806/s with one copy,
//! 750/s with lanes, eight alternating pairs). Before a thread took its last lane again, two
//! threads trading two lanes rendered no faster than one shared copy (1,680–1,935/s).
//! Where a render's time goes now (perf, one thread, no LTO): a patch render is the preset
//! logic's run 56%, `verify::check` 25% (of which the YAML parse of the output 22%), the Tera
//! render 11%; with `full: true` the YAML parses take 30% (the patch's in the check, and the
//! full config's read again as Talos would in `check_full`). The preset logic's sections, timed
//! in the script over the golden facts (one link, route and address; medians of 300 runs, each
//! with 2–3 µs of timing): `once` 21 µs, the four list lookups 14, default link, addresses and
//! subnets 52, the `node` map 64, the discovery loop 45, the multi-document links 30, extra
//! links 7, merging them 16, the rest 7. Rhai itself costs about 200 ns a step here (`let y =
//! i + 1` 216 ns, `a == b` 196 ns, a `tpl::eq` call 365 ns, reading a five-field map out of a
//! map 330–570 ns since it copies it), so one default-route test of one route is 4.2 µs: the
//! goals need fewer steps in the preset logic (natives for whole questions) rather than faster
//! ones. Scripts compile without Rhai's optimiser since this change: `_context.rhai` 809–822 µs
//! with it, 631–635 µs without, its run 244–248 against 250 µs (three alternating runs each).
//! The process row's wall times came in steps of 4 ms (11.7, 16.0, 20.0, 24.0, 28.0 ms...) for
//! a steady 15 ms of CPU, pinned to one core too: the exit waited, idle, for the kernel to end
//! the render cache's inotify watch (a grace period; a bare process holding one watch took
//! 1.6–10.4 ms to exit against 1.2 ms). A project is watched from its second render on now:
//! 60 alternating runs, medians 21.9 ms (before), 20.0 (no optimiser), 14.0 ms (neither, q1–q3
//! 13.6–14.2), `talm --version` 4.8 ms.
//! Since this change (one build each, no LTO, four alternating runs, before → after): patches
//! 2,024–2,094/s → 2,858–2,885/s on one thread and 3,799–3,974/s → 5,210–5,272/s on both cores,
//! full configs 960–981/s → 1,246–1,273/s and 1,681–1,710/s → 2,105–2,180/s. The steps: the
//! `talm/net` and `talm/disk` stdlib functions are natives (`_context.rhai` run 244 → 156 µs),
//! and so is dropping the VIPs from a list of addresses (`ip::without_hosts`: two script calls
//! over one address took 17 µs; run 154 → 139 µs); a full config reads the parse the render's
//! check kept instead of parsing each document again (the check used to parse the text before
//! the pipeline trimmed its final newlines, so the kept parse never matched: full configs on
//! one thread 1,075 → 1,200/s, both cores 1,870 → 2,060/s); the base a render's memory limit
//! counts from is a reading of at most 2 ms ago (every read of `statm` sums the process's memory
//! counters under a kernel spin lock the two threads contended for: 2–3%); lookups, `ARGS` and
//! the returned `node` are converted without Rhai's serde bridge, and the check's search for
//! risky strings no longer builds a path for every leaf (1–3%). The sections of the preset
//! logic now (µs, as above): `once` 15, list lookups 12, default link and addresses 8, subnets
//! 6, the `node` map 17, the discovery loop 16, the running config's interfaces 4, the
//! multi-document links 18, extra links 8, their checks 5, merging 12, the rest 7. Where a patch
//! render's time goes now (perf, rows only): the preset logic 48%, `verify::check` 34% (its YAML
//! parse 31%), Tera 11%.
//! The process row since this change: Rhai is built with i64 integers only (its standard package,
//! which every one-shot command builds, took 0.9 ms and 200 page faults with operators for
//! i8..u128, 0.65 ms and 134 without), and the library's preset logic imports
//! `talm/links_legacy` in its legacy branch only, so a multi-document render compiles neither it
//! nor `talm/validate` (prewarmed before: about 1 ms of CPU); and the command's own script is
//! compiled on the stdlib thread (after the package, before the modules) while the main thread
//! finds the project and builds its engine. 40 alternating runs (spawned as this bench spawns,
//! not through Python's `fork`, which adds about 1.5 ms to both sides and flattered the ratios
//! measured that way before), a slow hour, no LTO: 16.08 ms before, 15.24 with the first two,
//! 14.88 with all three (CPU 19.32 → 17.86 ms), `--version` 5.31 ms; with LTO 15.22 → 13.62 ms
//! against 5.18 (2.63×). This bench's own row with LTO: 10.78 against 3.46 ms (3.12×) before the
//! script compiled ahead, 11.29 against 3.59 ms (3.15×) after, in minutes when the same binary
//! took 10.1 and 13.1 ms in consecutive sets of 30 runs. Where a one-shot `template`'s CPU goes (perf, LTO,
//! every thread): page faults a third (1,493 faults against `--version`'s 766, about 2.5 µs each
//! on this machine: a first touch of a heap page costs 2.2 µs, 1.6 µs populated in bulk), Rhai's
//! parser a fifth (the stdlib modules, the preset logic, the command's script), Tera's parser 6%,
//! clap 4%; the render itself is under a tenth.
//! Since this change a one-shot `template` starts its script, the stdlib modules and its
//! project's templates before clap builds its definition (about 2 ms into the process instead of
//! 4.3–4.7), and each of those threads starts on the other core: a new thread of a busy parent
//! first ran 1–4 ms after its spawn on this machine, bound to the other core 0.05–0.14 ms after.
//! A render waiting for its templates compiles the stdlib modules the other thread has not
//! reached. 120 alternating runs of each build (LTO, a slow hour): 17.10 ms before, 14.94 with
//! the early start, 13.35 with the help (`--version` 6.2 ms). This row now runs the two
//! commands in turns: run one set after the other, the same build measured 2.49× and 3.04× in
//! consecutive runs.
//! Since this change the values reach a render prepared once per distinct values
//! (`render::prepared`: Rhai's `ARGS.values`, Tera's `values`, their risky strings; the facts'
//! risky strings once per facts), the `node` map goes into Tera without a JSON copy, and the
//! library's preset logic skips `network.extraLinks`' checks and merge when there are none.
//! Profile of the rows before (perf, per render): the preset logic 0.25 ms (of which converting
//! `ARGS` 13 µs), converting the context for Tera 21 µs, `node` to JSON 17 µs, the risky strings
//! of values and facts 17 µs, `verify::check`'s parse 76 µs; the preset logic's run (step row)
//! 188–197 µs before the `extraLinks` shortcut, 169–177 µs after. Two alternating runs against
//! the build before: patch 2,348–2,436 -> 2,956–3,012/s on one thread, 4,335–4,731 ->
//! 5,302–5,593/s on both cores; full configs 1,136–1,149 -> 1,300–1,301/s and 1,949–2,035 ->
//! 2,148–2,188/s (the last build also reads addresses and CIDRs as strings without trying them
//! as numbers, and finds comments in one byte pass).
//! Since this change the library's preset logic imports `talm/links` (the largest stdlib module)
//! only for `network.extraLinks` or a legacy render, a rendered config with `nameservers:` and
//! `[]` on the next line is read without libyaml (it fell back, 0.5 ms a render), and a one-shot
//! render that finds the thread ahead compiling its project compiles the part that thread has
//! not started (`base::caches::claim`) rather than idle: the process timeline (uprobes, a slow hour)
//! showed the main thread waiting 1.65 ms for the templates. On the fastest day yet, this row
//! taking turns with the build before: 4.92–5.02 → 4.75–4.81 ms against `--version`'s
//! 1.97–2.04 ms (2.48–2.50× → 2.36–2.41×), CPU 6.26–6.45 → 6.56–6.79 ms (the two threads work
//! at once where one idled).

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
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for the child we started.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64() * 1e3;
    assert!(pid > 0 && status == 0, "talm {args:?} failed ({status})");
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    (wall, tv(usage.ru_utime) + tv(usage.ru_stime))
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
