//! Writes are all-or-nothing (issue 9 §2): `talm init`, `init --encrypt`, `init --decrypt` and
//! `template -I` killed (SIGKILL) 20 times each — half at random moments of the run, half at a
//! step of the commit, which talm holds until the kill (`TALM_TXN_PAUSE_AT`), so no kill races
//! the clock — leave the folder old or new, never half — a half-done commit of several files
//! always has its journal, which the next run completes; a one-file write (`template -I`'s node
//! file) commits by renaming its staged file — and plaintext secrets only where .gitignore covers
//! them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Dir, GOLDEN_FACTS};

/// Kills that must land (talm still running when killed) per command.
const KILLS: usize = 20;
/// Of those, how many must land inside the commit (after the journal, before the end).
const IN_COMMIT: usize = 6;
/// Attempts before giving up on landing `KILLS`.
const MAX_ATTEMPTS: usize = 80;
/// How long a run may take to reach the step of its commit a kill is aimed at.
const REACH: Duration = Duration::from_secs(120);

/// What a secret looks like in a file: the age identity, the stability bundle's cluster
/// secret, and the user secret the tests put in values-secret.yaml.
const MARKERS: &[&str] = &["AGE-SECRET-KEY", "pofHbABZq7VXuObsdLdy", "hunter2"];
/// The plain secret files a project's .gitignore lists.
const IGNORED: &[&str] = &[
    "secrets.yaml",
    "talosconfig",
    "talm.key",
    "values-secret.yaml",
    "kubeconfig",
];

/// A tiny deterministic generator, so a failing run can be repeated.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// The file in which talm announces each step of its commits (`TALM_TXN_PAUSE_FILE`): outside
/// the folder under test, so it is no part of what the test compares.
fn steps_file(dir: &Path) -> std::path::PathBuf {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    std::env::temp_dir().join(format!("talm-steps-{name}"))
}

/// The commit steps talm announced in `file` so far.
fn steps_seen(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// talm in `dir`, announcing its commit steps in `steps_file(dir)` and, with `hold`, stopping
/// at that step until it is killed.
fn talm_cmd(dir: &Path, args: &[&str], hold: Option<usize>) -> Command {
    let steps = steps_file(dir);
    let _ = std::fs::remove_file(&steps);
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("talm"));
    c.current_dir(dir)
        .args(args)
        .env("TALM_TXN_PAUSE_FILE", &steps)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(n) = hold {
        c.env("TALM_TXN_PAUSE_AT", n.to_string());
    }
    c
}

/// Whether a staging folder in `dir` holds a file whose name passes `named`.
fn staging_holds(dir: &Path, named: fn(&str) -> bool) -> bool {
    let holds = |staging: &Path| {
        std::fs::read_dir(staging).is_ok_and(|mut inside| {
            inside.any(|f| f.is_ok_and(|f| named(&f.file_name().to_string_lossy())))
        })
    };
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()).any(|e| {
                e.file_name().to_string_lossy().starts_with(".talm-txn-") && holds(&e.path())
            })
        })
        .unwrap_or(false)
}

/// Whether a committed journal (`journal-<number>`) waits in a staging folder in `dir`.
fn journal_in(dir: &Path) -> bool {
    staging_holds(dir, |n| n.starts_with("journal-"))
}

/// Whether a staging folder in `dir` holds a staged file (`<number>-0`: a one-file write's,
/// which has no journal: the rename of that file is its commit).
fn staged_in(dir: &Path) -> bool {
    staging_holds(dir, |n| n.ends_with("-0"))
}

/// Whether a commit is under way in the folder or its nodes/: a committed journal waits, or a
/// node file's one-file write has staged its file and not yet renamed it into place.
fn committing(dir: &Path) -> bool {
    journal_in(dir) || journal_in(&dir.join("nodes")) || staged_in(&dir.join("nodes"))
}

/// How long a whole run takes, and how many steps its commits have, so kills can be spread over
/// the run and aimed at each step of the commit.
fn timings(dir: &Path, args: &[&str]) -> (Duration, usize) {
    let t = Instant::now();
    let status = talm_cmd(dir, args, None).status().unwrap();
    assert!(
        status.success(),
        "talm {args:?} failed in {}",
        dir.display()
    );
    let took = t.elapsed();
    let steps = steps_seen(&steps_file(dir));
    let _ = std::fs::remove_file(steps_file(dir));
    assert!(
        steps > 0,
        "talm {args:?}: no commit step was announced, so no kill can be aimed at one"
    );
    (took, steps)
}

/// When a kill is sent: at a time from the start, or at a step of the commit (talm holds that
/// step until the kill).
#[derive(Debug, Clone, Copy)]
enum Aim {
    FromStart(Duration),
    AtStep(usize),
}

/// Starts talm and kills it as `aim` says; true when it was still running.
fn kill_at(dir: &Path, args: &[&str], aim: Aim) -> bool {
    let hold = match aim {
        Aim::AtStep(n) => Some(n),
        Aim::FromStart(_) => None,
    };
    let mut child = talm_cmd(dir, args, hold).spawn().unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let _ = std::fs::remove_file(steps_file(dir));
            return false;
        }
        let reached = match aim {
            Aim::FromStart(after) => start.elapsed() >= after,
            Aim::AtStep(n) => steps_seen(&steps_file(dir)) > n,
        };
        if reached {
            break;
        }
        assert!(
            start.elapsed() < REACH,
            "talm {args:?} did not reach {aim:?} within {REACH:?}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let _ = std::fs::remove_file(steps_file(dir));
    true
}

/// The folder's files (staging folders aside) with their content.
fn visible(d: &Dir) -> BTreeMap<String, Vec<u8>> {
    d.snapshot()
        .into_iter()
        .filter(|(k, _)| !k.starts_with(".talm-txn-") && !k.contains("/.talm-txn-"))
        .collect()
}

/// Whether a committed journal waits in a staging folder at `rel`.
fn journal_pending(d: &Dir, rel: &str) -> bool {
    journal_in(&d.join(rel))
}

/// Every file holding a secret lies where git ignores it: a listed plain file, or a staging
/// folder whose own .gitignore ignores everything.
fn no_stray_plaintext(d: &Dir) {
    for (rel, content) in d.snapshot() {
        let text = String::from_utf8_lossy(&content);
        if !MARKERS.iter().any(|m| text.contains(m)) {
            continue;
        }
        if IGNORED.contains(&rel.as_str()) {
            continue;
        }
        let staged = Path::new(&rel).ancestors().skip(1).any(|a| {
            let name = a
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with(".talm-txn-")
                && std::fs::read_to_string(d.join(&a.join(".gitignore").display().to_string()))
                    .is_ok_and(|g| g.lines().any(|l| l.trim() == "*"))
        });
        assert!(
            staged,
            "{rel} holds a secret outside what .gitignore covers"
        );
    }
}

fn no_staging_left(d: &Dir) {
    let left: Vec<String> = d
        .snapshot()
        .into_keys()
        .filter(|k| k.contains(".talm-txn-"))
        .collect();
    assert!(left.is_empty(), "leftovers after recovery: {left:?}");
}

/// The files that differ between two states.
fn changed(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Kills `args` until `KILLS` kills have landed, each in a fresh folder made by `setup`: every
/// other kill at a random time of the whole run, the rest at a random step of the commit (after
/// its journal), which talm holds until the kill. Right after the kill the folder must be as it
/// was, complete (`done`), or hold a committed journal; then `recover` must leave it whole.
fn kill_runs(
    name: &str,
    setup: impl Fn() -> Dir,
    args: &[&str],
    done: impl Fn(&Dir, &BTreeMap<String, Vec<u8>>, &BTreeMap<String, Vec<u8>>) -> bool,
    recover: impl Fn(&Dir),
) {
    let (total, steps) = timings(setup().path(), args);
    let mut rng = Lcg(0x7a1_u64 ^ name.len() as u64);
    let (mut landed, mut in_commit, mut attempts) = (0, 0, 0);
    // Until both counts are reached: a kill at a random time may land anywhere or after the
    // run, so once 20 have landed the later attempts all aim at a step of the commit.
    while (landed < KILLS || in_commit < IN_COMMIT) && attempts < MAX_ATTEMPTS {
        attempts += 1;
        let d = setup();
        let old = visible(&d);
        let aim = if attempts % 2 == 0 || landed >= KILLS {
            Aim::AtStep(rng.below(steps as u64) as usize)
        } else {
            Aim::FromStart(Duration::from_micros(rng.below(total.as_micros() as u64)))
        };
        if !kill_at(d.path(), args, aim) {
            continue;
        }
        landed += 1;
        let now = visible(&d);
        let pending = committing(d.path());
        in_commit += usize::from(pending);
        assert!(
            now == old || pending || done(&d, &old, &now),
            "{name} attempt {attempts}: killed at {aim:?}, the folder is neither old nor new nor pending: changed {:?}",
            changed(&old, &now)
        );
        no_stray_plaintext(&d);
        recover(&d);
        no_staging_left(&d);
        no_stray_plaintext(&d);
    }
    eprintln!("{name}: {landed} of {attempts} kills landed, {in_commit} inside the commit");
    assert!(
        landed >= KILLS && in_commit >= IN_COMMIT,
        "{name}: {landed} of {attempts} kills landed ({in_commit} inside the commit); want {KILLS} ({IN_COMMIT} inside the commit)"
    );
}

const PROJECT_FILES: &[&str] = &[
    "Chart.yaml",
    "values.yaml",
    "secrets.yaml",
    "secrets.encrypted.yaml",
    "talosconfig",
    "talosconfig.encrypted",
    "talm.key",
    ".gitignore",
    ".talm-preset.lock",
    ".talm-preset.base",
    "charts/talm/Chart.yaml",
    "templates/controlplane.yaml",
];

fn init_args() -> Vec<&'static str> {
    vec![
        "init",
        "--preset",
        "cozystack",
        "--name",
        "mycluster",
        "--endpoints",
        "127.9.3.10",
    ]
}

#[test]
fn init_killed_anywhere_leaves_no_project_or_a_whole_one() {
    let args = init_args();
    kill_runs(
        "init",
        Dir::seeded,
        &args,
        |d, _, _| PROJECT_FILES.iter().all(|f| d.exists(f)),
        |d| {
            // A plain `talm init` afterwards completes the interrupted one or starts afresh.
            let done = PROJECT_FILES.iter().all(|f| d.exists(f)) && !journal_pending(d, ".");
            if !done {
                d.talm(init_args()).ok();
            }
            for f in PROJECT_FILES {
                assert!(d.exists(f), "{f} missing after recovery");
            }
            d.talm(["init", "--decrypt"]).ok();
        },
    );
}

/// An encrypted project whose plain files changed since, so --encrypt rewrites several files.
fn changed_plain() -> Dir {
    let d = Dir::project("cozystack");
    d.write("values-secret.yaml", "registry:\n  password: hunter2\n");
    d.talm(["init", "--encrypt"]).ok();
    d.write(
        "values-secret.yaml",
        "registry:\n  password: hunter2-rotated\n  user: bot\n",
    );
    let tc = d
        .read("talosconfig")
        .replace("- 127.0.0.11", "- 127.9.3.11");
    d.write("talosconfig", &tc);
    d
}

#[test]
fn encrypt_killed_anywhere_leaves_old_or_new() {
    kill_runs(
        "init --encrypt",
        changed_plain,
        &["init", "--encrypt"],
        |_, old, now| {
            // Both changed twins moved together, and nothing else but what --encrypt writes.
            let c = changed(old, now);
            let allowed = [
                "values-secret.encrypted.yaml",
                "talosconfig.encrypted",
                "secrets.encrypted.yaml",
                ".gitignore",
            ];
            c.contains(&"values-secret.encrypted.yaml".to_string())
                && c.contains(&"talosconfig.encrypted".to_string())
                && c.iter().all(|f| allowed.contains(&f.as_str()))
        },
        |d| {
            d.talm(["init", "--encrypt"]).ok();
            let plain = d.read("values-secret.yaml");
            d.remove("values-secret.yaml");
            d.talm(["init", "--decrypt"]).ok();
            assert_eq!(d.read("values-secret.yaml"), plain);
        },
    );
}

/// An encrypted project whose plain secret files are gone, so --decrypt writes them all.
fn plain_removed() -> Dir {
    let d = Dir::project("cozystack");
    d.write("values-secret.yaml", "registry:\n  password: hunter2\n");
    d.talm(["init", "--encrypt"]).ok();
    for f in ["secrets.yaml", "talosconfig", "values-secret.yaml"] {
        d.remove(f);
    }
    d
}

#[test]
fn decrypt_killed_anywhere_leaves_old_or_new() {
    kill_runs(
        "init --decrypt",
        plain_removed,
        &["init", "--decrypt"],
        |d, _, _| {
            ["secrets.yaml", "talosconfig", "values-secret.yaml"]
                .iter()
                .all(|f| d.exists(f))
        },
        |d| {
            d.talm(["init", "--decrypt"]).ok();
            assert!(d.read("values-secret.yaml").contains("hunter2"));
            assert_eq!(d.mode("secrets.yaml"), 0o600);
        },
    );
}

/// A node file with comments whose render changes with a --set value.
fn node_project() -> Dir {
    let d = Dir::project("cozystack");
    d.write("facts.yaml", GOLDEN_FACTS);
    d.write("nodes/n.yaml", "# my notes on this node\n# talm: nodes=[\"127.9.3.12\"], templates=[\"templates/controlplane.yaml\"]\nmachine: {}\n");
    d
}

#[test]
fn template_in_place_killed_anywhere_leaves_old_or_new() {
    let args = super::args(super::IN_PLACE, &["--set", "image=ghcr.io/x/talos:v1.13.1"]);
    let probe = node_project();
    probe.talm(&args).ok();
    let rendered = probe.read("nodes/n.yaml");
    kill_runs(
        "template -I",
        node_project,
        &args,
        |d, _, _| d.read("nodes/n.yaml") == rendered,
        |d| {
            d.talm(&args).ok();
            let node = d.read("nodes/n.yaml");
            assert!(
                node.starts_with("# my notes on this node\n# talm: "),
                "{node}"
            );
            assert!(node.contains("ghcr.io/x/talos:v1.13.1"));
        },
    );
}
