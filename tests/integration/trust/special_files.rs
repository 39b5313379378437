//! Every file talm reads is read bounded (issue 36 §4): a project input that is a link to
//! `/dev/zero`, a FIFO or an endless file ends in an error naming it and what it is, at once,
//! instead of a hang or a process grown to gigabytes; `values.yaml` is confined to the project
//! as the templates and value files are.

use std::time::Duration;

use super::{args as with, RENDER_CP as RENDER};
use crate::common::{Dir, Out, GOLDEN_FACTS};

/// A cozystack project with the golden facts and one node file.
fn project() -> Dir {
    let d = Dir::project("cozystack");
    d.write("facts.yaml", GOLDEN_FACTS);
    d.write(
        "nodes/n.yaml",
        "# talm: nodes=[\"127.9.3.12\"], templates=[\"templates/controlplane.yaml\"]\nmachine: {}\n",
    );
    d
}

/// talm in `d`, ended by force after a minute: a hang is a failure, not a stuck suite.
fn talm(d: &Dir, args: &[&str]) -> Out {
    let mut run = d.talm(args);
    run.cmd.timeout(Duration::from_secs(60));
    run.run()
}

fn mkfifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn link_to(path: &std::path::Path, target: &str) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// An endless file: as long as the disk allows, without using the disk.
fn endless(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    std::fs::File::create(path)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
}

#[track_caller]
fn refused(o: Out, want: &str) {
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(o.stderr, want);
}

const REGULAR: &str = "hint: talm reads its inputs from regular files: put the file itself there (a link to a regular file is fine)\n";
const LARGE: &str =
    "hint: check that the path names the file you meant (not a log, an image or a growing file)\n";

const OUTSIDE: &str = "hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it\n";

#[test]
fn values_yaml_is_confined_and_read_bounded() {
    let d = project();
    let root = d.path().canonicalize().unwrap();
    let at = |rel: &str| root.join(rel).display().to_string();
    let outside = Dir::new();
    outside.write("values.yaml", "endpoint: https://127.9.3.12:6443\n");
    let elsewhere = outside.path().canonicalize().unwrap().join("values.yaml");
    link_to(&d.join("values.yaml"), &elsewhere.display().to_string());
    refused(
        talm(&d, RENDER),
        &format!("Error: values.yaml leads outside the project at {}: through a symbolic link it resolves to {}\n{OUTSIDE}", d.path().display(), elsewhere.display()),
    );
    link_to(&d.join("values.yaml"), "/dev/zero");
    refused(
        talm(&d, RENDER),
        &format!("Error: values.yaml leads outside the project at {}: through a symbolic link it resolves to /dev/zero\n{OUTSIDE}", d.path().display()),
    );
    mkfifo(&d.join("values.yaml"));
    refused(
        talm(&d, RENDER),
        &format!(
            "Error: cannot read {}: it is a named pipe (FIFO), not a regular file\n{REGULAR}",
            at("values.yaml")
        ),
    );
    endless(&d.join("values.yaml"));
    refused(
        talm(&d, RENDER),
        &format!("Error: cannot read {}: it is larger than 16 MiB, the most talm reads for a text input\n{LARGE}", at("values.yaml")),
    );
}

const TALOSCONFIG: &str = "hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode\n";

#[test]
fn other_inputs_are_read_bounded() {
    let d = project();
    let at = |rel: &str| d.join(rel).display().to_string();
    let node = ["-n", "127.9.3.12", "-e", "127.9.3.12"];

    // A value file named on the command line may lie anywhere, but must be a regular file.
    refused(
        talm(&d, &with(RENDER, &["--values", "/dev/zero"])),
        &format!("Error: failed to read values file /dev/zero: cannot read /dev/zero: it is a character device, not a regular file\n{REGULAR}"),
    );
    mkfifo(&d.join("nodes/n.yaml"));
    for args in [
        &[
            "template",
            "--facts",
            "facts.yaml",
            "-f",
            "nodes/n.yaml",
            "-I",
        ][..],
        &["apply", "-f", "nodes/n.yaml"],
    ] {
        refused(
            talm(&d, args),
            "Error: error opening config file: cannot read nodes/n.yaml: it is a named pipe (FIFO), not a regular file\n",
        );
    }
    std::fs::remove_file(d.join("nodes/n.yaml")).unwrap();

    endless(&d.join("big"));
    refused(
        talm(&d, &with(&["version", "--talosconfig", "big"], &node)),
        &format!("Error: failed to read talosconfig {}: it is larger than 1 MiB, the most talm reads for a key or credentials file\n{TALOSCONFIG}", at("big")),
    );
    let talosconfig = d.read("talosconfig");
    mkfifo(&d.join("talosconfig"));
    refused(
        talm(&d, &with(&["version"], &node)),
        &format!("Error: failed to read talosconfig {}: it is a named pipe (FIFO), not a regular file\n{TALOSCONFIG}", at("talosconfig")),
    );
    d.remove("talosconfig");
    d.write("talosconfig", &talosconfig);

    mkfifo(&d.join("snap"));
    refused(
        talm(&d, &with(&["bootstrap", "--recover-from", "snap"], &node)),
        &format!("Error: error opening snapshot file: cannot read {}: it is a named pipe (FIFO), not a regular file\n{REGULAR}", at("snap")),
    );

    d.write("values-secret.encrypted.yaml", "a: ENC[AGE,data:xx]\n");
    let key = d.read("talm.key");
    mkfifo(&d.join("talm.key"));
    let o = talm(
        &d,
        &with(RENDER, &["--values", "values-secret.encrypted.yaml"]),
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr.lines().next().unwrap(),
        format!("Error: loading talm.key to decrypt \"values-secret.encrypted.yaml\": read key file: {}: it is a named pipe (FIFO), not a regular file", at("talm.key"))
    );
    d.remove("talm.key");
    d.write("talm.key", &key);
    d.remove("values-secret.encrypted.yaml");

    // The preset lock only feeds the drift check: a FIFO there is named in its warning and
    // the render goes on.
    mkfifo(&d.join(".talm-preset.lock"));
    let o = talm(&d, RENDER);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stderr,
        format!("WARN: could not check drift: cannot read {}: it is a named pipe (FIFO), not a regular file\n", at(".talm-preset.lock"))
    );
}
