//! Patch and edit of the machine config (dry run, real, EDITOR as a script, terminal rounds) and the Node methods' events.

use super::*;

#[test]
fn patch_and_edit_the_machine_config() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let config = || {
        nodes
            .node(&ip)
            .state()
            .config
            .as_ref()
            .unwrap()
            .text()
            .clone()
    };
    let original = config();
    let o = d
        .talm([
            "patch",
            "machineconfig",
            "-f",
            "nodes/cp.yaml",
            "-p",
            r#"{"machine": {"network": {"hostname": "by-patch"}}}"#,
            "--dry-run",
        ])
        .expect()
        .stdout("")
        .run();
    // What talm says, exactly; then the node's diff, whose old hostname derives from the address.
    let (said, diff) = o.stderr.split_once("Config diff:\n").unwrap();
    assert_eq!(
        addrs(said),
        "\
patched MachineConfigs.config.talos.dev/v1alpha1 at the node $A1
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
"
    );
    assert!(diff.contains("\n+        hostname: by-patch\n"), "{diff}");
    assert_eq!(config(), original, "a dry run changes nothing");

    d.write(
        "hostname.yaml",
        "- op: add\n  path: /machine/network/hostname\n  value: by-json-patch\n",
    );
    d.talm(["patch", "mc", "-f", "nodes/cp.yaml", "-p", "@hostname.yaml"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
patched MachineConfigs.config.talos.dev/v1alpha1 at the node $A1
Applied configuration without a reboot
",
        )
        .run();
    assert!(config().contains("hostname: by-json-patch"), "{}", config());
    d.talm([
        "patch",
        "mc",
        "-f",
        "nodes/cp.yaml",
        "--patch-file",
        "hostname.yaml",
    ])
    .expect()
    .mask(addrs)
    .stdout("")
    .stderr(
        "\
Apply was skipped: no changes detected.
",
    )
    .run();
    d.talm(["patch", "links", "-f", "nodes/cp.yaml", "-p", "{}"])
        .expect()
        .stderr(format!(
            "\
Error: {ip}: unsupported resource type: links
hint: talm patch machineconfig -p PATCH
"
        ))
        .status(1)
        .run();
    d.talm(["patch", "mc", "-f", "nodes/cp.yaml"])
        .expect()
        .stderr(
            "\
Error: either --patch or --patch-file should be defined
hint: give a patch inline (-p '{\"machine\": {...}}') or from a file (-p @patch.yaml)
",
        )
        .status(1)
        .run();

    // edit: the editor is a script changing the hostname; the node gets the saved config.
    d.write(
        "editor.sh",
        "#!/bin/sh\nsed -i 's/hostname: by-json-patch/hostname: by-editor/' \"$1\"\n",
    );
    let editor = d.join("editor.sh");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    d.talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", &editor)
        .ok();
    assert!(config().contains("hostname: by-editor"), "{}", config());
    d.talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", "true")
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Apply was skipped: no changes detected.
",
        )
        .run();
    d.talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", "sh -c ': > \"$0\"'")
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Apply was skipped: empty file.
",
        )
        .run();
    // A refused config reopens the editor with the error on top; saving that unchanged
    // cancels the edit and the node keeps its config.
    d.write(
        "bad-editor.sh",
        "#!/bin/sh\n[ -e \"$0.done\" ] && exit 0\ntouch \"$0.done\"\nprintf 'machine:\\n  bogus: 1\\n' > \"$1\"\n",
    );
    let bad = d.join("bad-editor.sh");
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = config();
    let o = d
        .talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", &bad)
        .expect().mask(addrs).stderr("\
Error: node $A1: ApplyConfiguration: error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:
machine:
    bogus: 1

Edit canceled, no valid changes were saved.
").status(1).run();
    assert!(
        o.stderr
            .contains(&format!("node {ip}: ApplyConfiguration: ")),
        "{}",
        o.stderr
    );
    assert_eq!(config(), before);
    let mut r = d.talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"]);
    for k in ["EDITOR", "VISUAL", "TALOS_EDITOR"] {
        r.cmd.env_remove(k);
    }
    r.expect()
        .stderr(
            "\
Error: talm edit requires an interactive terminal; stdin is not a tty
hint: run it from a terminal, or set EDITOR to a program that edits the file without one
",
        )
        .status(1)
        .run();
    d.talm(["edit", "links", "-f", "nodes/cp.yaml"])
        .env("EDITOR", "true")
        .expect()
        .stderr(
            "\
Error: only the machineconfig resource can be edited
hint: talm edit machineconfig
",
        )
        .status(1)
        .run();
    // Another namespace holds no machine config: nothing to edit, as talosctl's --namespace.
    d.talm([
        "edit",
        "machineconfig",
        "--namespace",
        "runtime",
        "-f",
        "nodes/cp.yaml",
    ])
    .env("EDITOR", "false")
    .expect()
    .stdout("")
    .stderr("")
    .run();
}

/// An editor script (0755) in `d` that logs each run to `runs` and then runs `body`.
fn editor(d: &Dir, name: &str, body: &str) -> std::path::PathBuf {
    let runs = d.join("runs");
    d.write(
        name,
        &format!("#!/bin/sh\necho \"$1\" >> '{}'\n{body}\n", runs.display()),
    );
    let path = d.join(name);
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[test]
fn edit_never_loops_on_a_refused_config_and_leaves_no_copy() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let runs = || {
        d.read("runs")
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // An editor writing the same refused config (without the error comment) every time: the
    // second save of it ends the edit, having called the node once.
    let same = editor(&d, "same.sh", "printf 'machine:\\n  bogus: 1\\n' > \"$1\"");
    let o = d
        .talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", &same)
        .run();
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .ends_with("\nEdit canceled: the config saved is the one the node refused.\n"),
        "{}",
        o.stderr
    );
    assert_eq!(runs().len(), 2);
    // A different refused config every time: three rounds without a terminal, then it ends.
    d.remove("runs");
    let other = editor(
        &d,
        "other.sh",
        "echo x >> \"$0.runs\"; n=$(wc -l < \"$0.runs\"); printf 'machine:\\n  bogus: %s\\n' \"$n\" > \"$1\"",
    );
    let o = d
        .talm(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
        .env("EDITOR", &other)
        .run();
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .ends_with("\nEdit canceled: the node refused 3 edits.\n"),
        "{}",
        o.stderr
    );
    let copies = runs();
    assert_eq!(copies.len(), 3);
    // Every copy lay in the project's git-ignored staging folder, and none is left.
    let root = d.path().canonicalize().unwrap();
    for c in &copies {
        let p = std::path::Path::new(c);
        let staging = p.parent().unwrap();
        assert_eq!(staging.parent().unwrap(), root, "{c}");
        assert!(
            staging
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".talm-txn-"),
            "{c}"
        );
        assert!(!p.exists(), "{c} is left");
    }

    // Ended by a signal while the editor runs: the copy goes too, and talm ends as the signal.
    for (signal, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
        (libc::SIGINT, 130),
    ] {
        d.remove("runs");
        // The editor outlives talm: its output goes nowhere, so nothing waits for it.
        let slow = editor(&d, "slow.sh", "sleep 20 >/dev/null 2>&1");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("talm"))
            .current_dir(d.path())
            .args(["edit", "machineconfig", "-f", "nodes/cp.yaml"])
            .env("EDITOR", &slow)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        // The shell creates the file before it writes the line: wait for the line.
        while !d.exists("runs") || runs().is_empty() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "the editor did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let copy = runs()[0].clone();
        assert!(std::path::Path::new(&copy).exists());
        unsafe { libc::kill(child.id() as i32, signal) };
        assert_eq!(child.wait().unwrap().code(), Some(code));
        assert!(!std::path::Path::new(&copy).exists(), "{copy} is left");
    }
}

#[test]
fn on_a_terminal_each_new_edit_round_is_asked_for() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let runs = || d.read("runs").lines().count();
    // A different refused config every time the editor runs.
    let other = editor(
        &d,
        "other.sh",
        "echo x >> \"$0.runs\"; n=$(wc -l < \"$0.runs\"); printf 'machine:\\n  bogus: %s\\n' \"$n\" > \"$1\"",
    );
    let args = "edit machineconfig -f nodes/cp.yaml";
    let env = [("EDITOR", other.as_path())];

    // Asked after each refusal; "n" ends the edit there.
    let (ok, screen) = d.talm_in_tty_with(&env, args, "y\nn\n");
    assert!(!ok, "{screen}");
    assert_eq!(
        screen.matches("Edit it again? [Y/n]: ").count(),
        2,
        "{screen}"
    );
    assert!(
        screen
            .contains("The node refused the config (edit 1 of at most 10). Edit it again? [Y/n]: "),
        "{screen}"
    );
    assert!(
        screen.trim_end().ends_with(
            "Edit canceled: the node refused the config and no other edit was asked for."
        ),
        "{screen}"
    );
    assert_eq!(runs(), 2);

    // Yes every time: ten rounds at most on a terminal.
    d.remove("runs");
    let (ok, screen) = d.talm_in_tty_with(&env, args, &"\n".repeat(12));
    assert!(!ok, "{screen}");
    assert!(
        screen
            .trim_end()
            .ends_with("Edit canceled: the node refused 10 edits."),
        "{screen}"
    );
    assert_eq!(runs(), 10);
}

#[test]
fn node_methods_are_documented_typed_and_publish_events() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |s| s.hardware.extensions = vec!["hello".into()]);
    let d = configured(&nodes, &ip);
    let api = d.talm(["help", "api"]).ok().stdout;
    for name in [
        "service_start",
        "service_stop",
        "service_restart",
        "restart",
        "rollback",
        "shutdown",
        "wait_down",
        "wipe_disk",
        "meta_write",
        "meta_delete",
        "image_pull",
        "machine_config",
        "patch_config",
        "edit_text",
    ] {
        assert!(
            api.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} in:\n{api}"
        );
    }
    d.write(
        "typo.rhai",
        &format!("let n = node(\"{ip}\");\nn.shutdown(#{{ forse: true }});\n"),
    );
    d.talm(["run", "typo.rhai"])
        .expect()
        .stderr(
            "\
Error: unknown option \"forse\" for n.shutdown; the options are: force, wait, timeout, kernel_log
hint: did you mean \"force\" instead of \"forse\"?
hint: `talm help api shutdown` describes the options
",
        )
        .status(1)
        .run();
    d.write(
        "typo.rhai",
        &format!("let n = node(\"{ip}\");\nn.wipe_disk([\"vdb\"], #{{ method: \"SLOW\" }});\n"),
    );
    d.talm(["run", "typo.rhai"])
        .expect()
        .stderr(
            "\
Error: invalid wipe method \"SLOW\"
hint: use FAST (signatures only) or ZEROES
",
        )
        .status(1)
        .run();
    // The methods as a playbook uses them; the dry run leaves the config as it was.
    d.write(
        "change.rhai",
        &format!(
            r#"let n = node("{ip}");
print(n.service_stop("ext-hello"));
n.meta_write(12, "from a playbook");
print(n.get("meta", "0x0c").spec.value);
let r = n.patch_config(`machine:
  network:
    hostname: from-playbook`, #{{ dry_run: true }});
print(`${{r.changed}} ${{r.mode}}`);
print(n.image_pull("busybox", #{{ namespace: "system" }}).name.sub_string(0, 32));
"#
        ),
    );
    let o = d.talm(["run", "change.rhai"]).ok();
    assert_eq!(
        o.stdout,
        "Service \"ext-hello\" stopped\nfrom a playbook\ntrue no-reboot\ndocker.io/library/busybox@sha256\n"
    );
    let st = nodes.node(&ip).state();
    assert!(!st.config.as_ref().unwrap().text().contains("from-playbook"));
    drop(st);
    // The stop was published as a service event, as `talm events` streams it.
    let (events, _) = nodes
        .node(&ip)
        .events
        .start(&talm::proto::machine::EventsRequest {
            tail_events: -1,
            ..Default::default()
        })
        .unwrap();
    let stopped = events.iter().any(|e| {
        e.data.type_url == "talos/runtime/machine.ServiceStateEvent"
            && <talm::proto::machine::ServiceStateEvent as prost::Message>::decode(
                e.data.value.as_slice(),
            )
            .is_ok_and(|s| s.service == "ext-hello" && s.message == "Service finished successfully")
    });
    assert!(stopped, "ServiceStateEvent for ext-hello");
}
