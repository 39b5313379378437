//! Tests of the rotation journal: its steps, the resume line, refusals, and the file on disk.

use super::*;

fn flags(talos: bool, kubernetes: bool, cps: &[&str], workers: &[&str]) -> Flags {
    Flags {
        talos,
        kubernetes,
        control_plane_nodes: cps.iter().map(|s| s.to_string()).collect(),
        worker_nodes: workers.iter().map(|s| s.to_string()).collect(),
    }
}

fn change(tag: &str) -> Change {
    let pair = |age: &str| CaPair {
        crt: format!("{age}-{tag}-crt"),
        key: format!("{age}-{tag}-key"),
    };
    Change {
        old: pair("old"),
        new: pair("new"),
    }
}

fn both() -> Rotation {
    Rotation::new(
        flags(true, true, &["a"], &["b", "c"]),
        Some(change("os")),
        Some(change("k8s")),
        "talosconfig text".into(),
    )
    .unwrap()
}

#[test]
fn steps_run_through_both_cas_then_stop() {
    let mut r = both();
    assert_eq!(
        r.resume_line(),
        "> Resuming the CA rotation journaled in .talm/rotate-ca.yaml: Talos API, step 1 of 3 (\"Adding new Talos CA as accepted\"), 0 of 3 nodes done"
    );
    r.node_done("a");
    r.node_done("a");
    assert!(r.advance());
    r.node_done("b");
    assert_eq!(
        r.resume_line(),
        "> Resuming the CA rotation journaled in .talm/rotate-ca.yaml: Talos API, step 2 of 3 (\"Making new Talos CA the issuing CA, old Talos CA the accepted CA\"), 1 of 3 nodes done"
    );
    assert!(r.advance());
    assert!(r.advance());
    assert_eq!(
        r.at,
        Position {
            ca: Ca::Kubernetes,
            step: 1,
            done: vec![]
        }
    );
    assert!(r.advance());
    assert!(r.advance());
    assert_eq!(
        r.resume_line(),
        "> Resuming the CA rotation journaled in .talm/rotate-ca.yaml: Kubernetes API, step 3 of 3 (\"Removing old Kubernetes CA from the accepted CAs\"), 0 of 3 nodes done"
    );
    assert!(!r.advance());
    assert_eq!(r.at.step, 3);
}

#[test]
fn contradicting_flags_are_refused_with_the_command_that_finishes() {
    let r = both();
    r.check_flags(&flags(true, true, &["a"], &["c", "b"]))
        .unwrap();
    let err = r
        .check_flags(&flags(true, false, &["a"], &["b"]))
        .unwrap_err();
    assert_eq!(
        talm_base::error::render(&err),
        "Error: the CA rotation journaled in .talm/rotate-ca.yaml is unfinished and was started with other flags: it rotates the Talos API and Kubernetes API CAs, this run the Talos API CA; its worker nodes are [\"b\" \"c\"], this run names [\"b\"]\n\
         hint: finish it with the same flags (`talm rotate-ca --control-plane-nodes a --worker-nodes b,c --dry-run=false`, with the -n/-e or -f of the first run), or delete .talm/rotate-ca.yaml to start over\n"
    );
    assert_eq!(
        talm_base::error::render(&r.refuse_dry_run().unwrap_err()),
        "Error: the CA rotation journaled in .talm/rotate-ca.yaml is unfinished: a dry run cannot show it\n\
         hint: finish it with the same flags (`talm rotate-ca --control-plane-nodes a --worker-nodes b,c --dry-run=false`, with the -n/-e or -f of the first run), or delete .talm/rotate-ca.yaml to start over\n"
    );
    let k8s_only = Rotation::new(
        flags(false, true, &["a"], &[]),
        None,
        Some(change("k8s")),
        String::new(),
    )
    .unwrap();
    assert_eq!(
        k8s_only.flags.command(),
        "talm rotate-ca --talos=false --control-plane-nodes a --dry-run=false"
    );
    assert!(Rotation::new(flags(false, false, &["a"], &[]), None, None, String::new()).is_err());
    assert!(Rotation::new(flags(true, false, &["a"], &[]), None, None, "tc".into()).is_err());
}

#[cfg(unix)]
#[test]
fn the_journal_is_a_secret_git_never_sees_and_goes_away() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(Rotation::load(root).unwrap(), None);
    assert_eq!(unfinished_hint(root), None);
    let mut r = both();
    r.save(root).unwrap();
    r.node_done("a");
    r.save(root).unwrap();
    let mode = |rel: &str| {
        std::fs::metadata(root.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(JOURNAL), 0o600);
    assert_eq!(
        std::fs::read_to_string(root.join(".talm/.gitignore")).unwrap(),
        "*\n"
    );
    assert_eq!(Rotation::load(root).unwrap(), Some(r.clone()));
    assert_eq!(
        unfinished_hint(root).unwrap(),
        "a CA rotation is unfinished (.talm/rotate-ca.yaml): the nodes may be between two CAs; `talm rotate-ca --control-plane-nodes a --worker-nodes b,c --dry-run=false` with the same flags as the first run resumes it"
    );
    // Only the journal and its folder's .gitignore: no staging left behind.
    let names: Vec<String> = std::fs::read_dir(root.join(STATE_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sorted(&names), vec![".gitignore", "rotate-ca.yaml"]);
    Rotation::remove(root).unwrap();
    assert_eq!(Rotation::load(root).unwrap(), None);

    std::fs::write(root.join(JOURNAL), "version: 7\n").unwrap();
    let err = talm_base::error::render(&Rotation::load(root).unwrap_err());
    assert!(
        err.starts_with("Error: .talm/rotate-ca.yaml is damaged: "),
        "{err}"
    );
    assert!(
        err.ends_with("hint: it journals an unfinished `talm rotate-ca`; delete .talm/rotate-ca.yaml to start the rotation over\n"),
        "{err}"
    );
}
