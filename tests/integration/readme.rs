//! The README's guide runs as written: every `sh` block of the sections below, line by line,
//! through the real binary against one simulated node, the README's example addresses swapped
//! for loopback ones.

use std::path::{Path, PathBuf};

use crate::common::expect::{services_stopped, uuids, RESET_CP_PHASES};
use crate::common::sim::Nodes;
use crate::common::{net, Dir, Out};

const README: &str = include_str!("../../README.md");

/// The sections whose blocks run, in order, each with the subsections under it: the numbered
/// bring-up (init to kubeconfig), then day two on the node it brought up. "Coming from the Go
/// talm" needs a Go talm project and is covered by `migrate.rs`.
const SECTIONS: [&str; 2] = ["## Bring up a cluster", "### Changing and checking a node"];

/// The file a `yaml` block of these sections edits: each `key: value` line of the block replaces
/// the line of that top-level key, as the reader is told to edit it.
const EDITED: &str = "values.yaml";

/// Commands of the blocks that are not talm and are skipped, each with why.
const SKIPPED: [(&str, &str); 2] = [
    // The test runs the binary cargo built for it.
    ("cargo", "installs talm"),
    // Versioning the project is git's business; the test's folder is thrown away.
    ("git", "commits the project"),
];

/// Files a README line takes as given, written into the project before the day-two block:
/// the side-patch of `apply -f nodes/node1.yaml -f extra.yaml`.
const GIVEN: [(&str, &str); 1] = [(
    "extra.yaml",
    "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n",
)];

/// The text of the section under `heading`, its subsections included: up to the next heading of
/// the same or a higher level.
fn section(heading: &str) -> &'static str {
    let level = heading.split(' ').next().unwrap().len();
    let start = README
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README: no {heading:?}"))
        + heading.len()
        + 2;
    let rest = &README[start..];
    let end = rest
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| {
            let hashes = rest[i..].bytes().take_while(|&b| b == b'#').count();
            (1..=level).contains(&hashes) && rest[i + hashes..].starts_with(' ')
        })
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The fenced blocks of a section in order, each as (language, text).
fn blocks(section: &str) -> Vec<(&str, &str)> {
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .map(|b| b.split_once('\n').expect("a fenced block"))
        .collect()
}

struct Shell<'a> {
    d: &'a Dir,
    nodes: &'a Nodes,
    /// The working folder, relative to the test's folder (`cd mycluster`).
    cwd: PathBuf,
    /// The README's addresses and what stands for them.
    subs: Vec<(&'static str, String)>,
    /// Each talm command run (addresses substituted) with its output.
    ran: Vec<(String, Out)>,
    /// How many `yaml` blocks were applied as edits.
    edits: usize,
}

impl Shell<'_> {
    /// Runs one line of a block: `#` comments dropped, `&&` chains in order, `mkdir`, `cd`,
    /// `talm ... > file`, the commands of `SKIPPED` skipped.
    fn line(&mut self, line: &str) {
        let line = line.split(" #").next().unwrap().trim();
        if line.is_empty() || line.starts_with('#') {
            return;
        }
        let line = self
            .subs
            .iter()
            .fold(line.to_string(), |l, (from, to)| l.replace(from, to));
        for cmd in line.split("&&").map(str::trim) {
            let (cmd, redirect) = match cmd.split_once(" > ") {
                Some((cmd, file)) => (cmd.trim(), Some(file.trim())),
                None => (cmd, None),
            };
            let words: Vec<&str> = cmd.split_whitespace().collect();
            match words[..] {
                ["mkdir", dir] => std::fs::create_dir(self.here().join(dir)).unwrap(),
                ["cd", dir] => self.cwd.push(dir),
                ["talm", ref args @ ..] => self.talm(cmd, args, redirect),
                [first, ..] if SKIPPED.iter().any(|(c, _)| *c == first) => {}
                _ => panic!("README: {cmd:?} is neither talm nor a known shell step"),
            }
        }
    }

    /// Applies a `yaml` block: each `key: value` line replaces the line of that key in
    /// [`EDITED`], which must have it.
    fn edit(&mut self, block: &str) {
        let path = self.here().join(EDITED);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            let line = self
                .subs
                .iter()
                .fold(line.to_string(), |l, (from, to)| l.replace(from, to));
            let key = line.split_once(':').expect("a `key: value` line").0;
            let at = text
                .lines()
                .position(|l| l.split_once(':').is_some_and(|(k, _)| k == key))
                .unwrap_or_else(|| panic!("README: {EDITED} has no {key:?} to edit"));
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines[at] = line;
            text = lines.join("\n") + "\n";
        }
        std::fs::write(&path, text).unwrap();
        self.edits += 1;
    }

    fn here(&self) -> PathBuf {
        self.d.path().join(&self.cwd)
    }

    fn talm(&mut self, cmd: &str, args: &[&str], redirect: Option<&str>) {
        // A maintenance apply returns as the node starts rebooting into its config, as Talos
        // does; the next line (bootstrap) needs it back, so wait for that boot as a reader would.
        let reboots = args.first() == Some(&"apply") && args.contains(&"-i");
        let boots = self.nodes.boots(&self.nodes.addr);
        let o = self
            .d
            .talm_in(self.cwd.to_str().unwrap(), args)
            .env_remove("TALOSCONFIG")
            .run();
        assert_eq!(
            o.code, 0,
            "README line `{cmd}` failed:\n{}{}",
            o.stdout, o.stderr
        );
        if let Some(file) = redirect {
            std::fs::write(self.here().join(file), &o.stdout).unwrap();
        }
        if reboots {
            self.nodes.wait_reboot(&self.nodes.addr, boots);
        }
        self.ran.push((cmd.to_string(), o));
    }
}

#[test]
fn guide_blocks_run_as_written() {
    let lan = net::subnet(24);
    let node = lan.host(11);
    // The node was booted from an ISO older than the preset's image, so `upgrade` goes forward.
    let nodes = Nodes::start(&[&node], |spec| spec.version = "v1.12.0".into());
    let d = Dir::new();
    let mut sh = Shell {
        d: &d,
        nodes: &nodes,
        cwd: PathBuf::new(),
        subs: vec![
            ("192.168.123.0/24", lan.cidr()),
            ("192.168.123.11", node.clone()),
        ],
        ran: Vec::new(),
        edits: 0,
    };
    for heading in SECTIONS {
        let blocks = blocks(section(heading));
        assert!(
            blocks.iter().any(|(lang, _)| *lang == "sh"),
            "README: no sh block under {heading:?}"
        );
        if heading == "### Changing and checking a node" {
            for (file, text) in GIVEN {
                std::fs::write(sh.here().join(file), text).unwrap();
            }
        }
        for (lang, block) in blocks {
            match lang {
                "sh" => block.lines().for_each(|line| sh.line(line)),
                "yaml" => sh.edit(block),
                _ => panic!("README: a {lang:?} block under {heading:?}"),
            }
        }
    }
    assert_eq!(sh.edits, 1, "the endpoint step's edit of {EDITED}");
    // The lines ran from the project folder the first block made, and did what they say.
    assert_eq!(sh.cwd, Path::new("mycluster"));
    let out = |cmd: &str| {
        let (_, o) = sh
            .ran
            .iter()
            .find(|(c, _)| c == cmd)
            .unwrap_or_else(|| panic!("README: no line ran `{cmd}`"));
        o
    };
    // The scan of the README's network finds the node, configured (a scan only asks the version
    // of a maintenance node); the reset at the end switches it off.
    let scan = out(&format!("talm scan {}", lan.cidr()));
    assert_eq!(
        scan.stdout,
        format!("ADDRESS          MODE          VERSION\n{node:<17}configured\n")
    );
    assert_eq!(
        scan.stderr,
        format!("1 Talos endpoint(s) in {} on port 50000\n", lan.cidr())
    );
    let reset = out("talm reset -f nodes/node1.yaml");
    assert_eq!(
        uuids(&reset.stderr),
        services_stopped(&node.to_string(), "reset", RESET_CP_PHASES, "")
    );
    assert_eq!(d.mode("mycluster/kubeconfig"), 0o600);
    let node1 = d.read("mycluster/nodes/node1.yaml");
    assert!(
        node1.contains("image: ghcr.io/cozystack/cozystack/talos:v1.12.6"),
        "upgrade wrote the image back:\n{node1}"
    );
    assert!(
        nodes.node(&node).state().changes.powered_off,
        "reset switched the node off"
    );
}
