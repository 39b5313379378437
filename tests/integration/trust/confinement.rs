//! Playbooks stay inside their project (issue 9 §4): the `project::` natives, `use_project` and
//! `n.copy_to`'s local folder refuse paths outside it, links followed; and `template -I` does
//! not write through a linked `nodes/` folder that leads outside the project; Chart.yaml's value
//! files stay inside it too, and scripts and templates do not reach out through links.

use std::os::unix::fs::symlink;

use crate::common::sim::Nodes;
use crate::common::{net, Dir, GOLDEN_FACTS};

/// Runs `script` as a playbook in `d`; it must fail with `needle` and print nothing secret.
fn refused(d: &Dir, script: &str, needle: &str) {
    d.write("p.rhai", script);
    let o = d.talm(["run", "p.rhai"]).fails_with(needle);
    assert!(
        o.stderr
            .contains("hint: playbooks read and write only inside their project"),
        "{}",
        o.stderr
    );
    assert!(!o.stdout.contains("outside-secret"), "{}", o.stdout);
}

#[test]
fn project_natives_in_a_playbook_stay_inside_the_project() {
    let outside = Dir::new();
    outside.write("s.txt", "outside-secret\n");
    let o = outside.path().display().to_string();
    let d = Dir::project("generic");
    let root = d.path().display().to_string();
    let away = |what: &str, path: &str| format!("{what}: {path} is outside the project at {root}");
    refused(
        &d,
        &format!("out(project::read({o:?}, \"s.txt\"));\n"),
        &away("project::read", &o),
    );
    refused(
        &d,
        &format!("out(`${{project::exists({o:?}, \"s.txt\")}}`);\n"),
        &away("project::exists", &o),
    );
    refused(
        &d,
        "out(`${project::existing(\"/etc\", [\"passwd\", \"shadow\"])}`);\n",
        &away("project::existing", "/etc"),
    );
    refused(
        &d,
        "out(`${project::files_under(\"/etc\", \"ssl\")}`);\n",
        &away("project::files_under", "/etc"),
    );
    refused(
        &d,
        &format!("let p = project::plan({o:?});\np.write(\"pwned.txt\", \"x\", \"public\", \"\");\np.commit();\n"),
        &away("project::plan", &o),
    );
    assert!(!outside.exists("pwned.txt"));
    let file = outside.join("s.txt").display().to_string();
    refused(
        &d,
        &format!("out(project::node_file({file:?}).body);\n"),
        &away("project::node_file", &file),
    );
    // A folder inside the project that is a link to one outside it.
    symlink(outside.path(), d.join("shared")).unwrap();
    refused(
        &d,
        "out(project::read(project().root + \"/shared\", \"s.txt\"));\n",
        &format!("project::read: shared leads outside the project at {root}"),
    );
    // use_project switches only to another talm project.
    d.write(
        "use.rhai",
        &format!("use_project({o:?});\nout(file::read(\"s.txt\"));\n"),
    );
    let out = d
        .talm(["run", "use.rhai"])
        .expect().stderr(format!("\
Error: use_project: {o} is not a talm project (it has no Chart.yaml and secrets.yaml or secrets.encrypted.yaml)
hint: a playbook switches only to a talm project: create it first with talm([\"init\", \"--root\", DIR]), or run the playbook inside it
")).status(1).run();
    assert!(!out.stdout.contains("outside-secret"));

    // Inside the project, and in another talm project it switched to, all of it works.
    d.write(
        "inside.rhai",
        "let r = project().root;\nlet p = project::plan(r);\np.write(\"notes.txt\", project::read(r, \"Chart.yaml\"), \"public\", \"\");\np.commit();\nout(`${project::existing(r, [\"values.yaml\", \"nope\"])}`);\n",
    );
    assert_eq!(
        d.talm(["run", "inside.rhai"]).ok().stdout,
        "[\"values.yaml\"]"
    );
    assert_eq!(d.read("notes.txt"), d.read("Chart.yaml"));
    let other = Dir::project("generic");
    other.write("values.yaml", "other: true\n");
    d.write(
        "switch.rhai",
        &format!(
            "use_project({:?});\nout(file::read(\"values.yaml\") + project::read(project().root, \"values.yaml\"));\n",
            other.path().display().to_string()
        ),
    );
    assert_eq!(
        d.talm(["run", "switch.rhai"]).ok().stdout,
        "other: true\nother: true\n"
    );
}

#[test]
fn copy_to_from_a_playbook_unpacks_only_inside_the_project() {
    let cp = net::addr();
    let nodes = Nodes::start(&[&cp], |_| {});
    nodes.install_control_plane(&cp);
    let outside = Dir::new();
    let d = Dir::project("generic");
    let copy = |dest: &str| {
        format!("let t = talos::targets(#{{ nodes: [{cp:?}], endpoints: [{cp:?}], files: [], insecure: false }});\nt[0].copy_to(\"/etc\", {dest:?});\n")
    };
    let dest = outside.join("etc").display().to_string();
    refused(
        &d,
        &copy(&dest),
        &format!(
            "copy_to: {dest} is outside the project at {}",
            d.path().display()
        ),
    );
    assert!(!outside.exists("etc"));
    symlink(outside.path(), d.join("shared")).unwrap();
    refused(
        &d,
        &copy("shared/etc"),
        "copy_to: shared/etc leads outside the project",
    );
    assert!(!outside.exists("etc"));
    d.write("in.rhai", &copy("etc-copy"));
    d.talm(["run", "in.rhai"]).ok();
    assert!(d.exists("etc-copy/hostname"));
}

#[test]
fn template_in_place_does_not_write_through_a_linked_nodes_folder() {
    let ip = net::addr();
    let node = format!(
        "# talm: nodes=[\"{ip}\"], templates=[\"templates/controlplane.yaml\"]\nmachine: {{}}\n"
    );
    let outside = Dir::new();
    outside.write("n.yaml", &node);
    let d = Dir::project("cozystack");
    d.write("facts.yaml", GOLDEN_FACTS);
    if d.join("nodes").is_dir() {
        std::fs::remove_dir_all(d.join("nodes")).unwrap();
    }
    symlink(outside.path(), d.join("nodes")).unwrap();
    d.refused(
        super::IN_PLACE,
        &format!(
            "nodes/n.yaml leads outside the project at {}",
            d.path().display()
        ),
    );
    assert_eq!(outside.read("n.yaml"), node);
    // A linked folder that stays inside the project is written through.
    std::fs::remove_file(d.join("nodes")).unwrap();
    d.write("cluster-nodes/n.yaml", &node);
    symlink(d.join("cluster-nodes"), d.join("nodes")).unwrap();
    d.talm(super::IN_PLACE).ok();
    let written = d.read("cluster-nodes/n.yaml");
    assert!(
        written != node && written.starts_with(&format!("# talm: nodes=[\"{ip}\"]")),
        "{written}"
    );
}

#[test]
fn chart_value_files_stay_inside_the_project() {
    let d = Dir::project("cozystack");
    let outside = Dir::new();
    outside.write("stolen.yaml", "endpoint: https://10.0.0.1:6443\n");
    let abs = outside.join("stolen.yaml").display().to_string();
    super::secrets::edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        &format!("valueFiles: [{abs:?}]"),
    );
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    d.talm(super::RENDER_CP)
        .expect()
        .replace(outside.path().display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: Chart.yaml templateOptions.valueFiles: path \"$OUTSIDE/stolen.yaml\" is outside the project at $DIR
hint: files Chart.yaml names must lie inside the project; pass a file from elsewhere on the command line (--values, --set-file) instead
")
        .status(1)
        .run();
    std::os::unix::fs::symlink(outside.join("stolen.yaml"), d.join("linked.yaml")).unwrap();
    super::secrets::edit(
        &d,
        "Chart.yaml",
        &format!("valueFiles: [{abs:?}]"),
        "valueFiles: [linked.yaml]",
    );
    d.talm(super::RENDER_CP)
        .expect()
        .replace(outside.path().display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: Chart.yaml templateOptions.valueFiles: linked.yaml leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/stolen.yaml
hint: files Chart.yaml names must lie inside the project; pass a file from elsewhere on the command line (--values, --set-file) instead
")
        .status(1)
        .run();
}

#[cfg(unix)]
#[test]
fn links_cannot_lead_scripts_or_templates_outside_the_project() {
    use std::os::unix::fs::symlink;
    let outside = Dir::new();
    outside.write("secret.txt", "s3cret\n");
    outside.write("part.tera", "leaked: {{ 1 }}\n");
    let real = outside.path().canonicalize().unwrap();
    let d = Dir::project("generic");

    symlink(outside.join("secret.txt"), d.join("link.txt")).unwrap();
    d.write("read.rhai", "out(file::read(\"link.txt\"));\n");
    let o = d
        .talm(["run", "read.rhai"])
        .expect()
        .replace(real.display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: link.txt leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/secret.txt
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();
    assert!(!o.stdout.contains("s3cret"));
    d.write("exists.rhai", "out(`${file::exists(\"link.txt\")}`);\n");
    d.talm(["run", "exists.rhai"])
        .expect()
        .replace(real.display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: link.txt leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/secret.txt
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();

    symlink(outside.path(), d.join("shared")).unwrap();
    d.write("write.rhai", "file::write(\"shared/new.txt\", \"x\");\n");
    d.talm(["run", "write.rhai"])
        .expect()
        .replace(real.display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: shared/new.txt leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/new.txt
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();
    assert!(!outside.exists("new.txt"));

    // A link that stays inside the project is fine.
    symlink(d.join("values.yaml"), d.join("values-link.yaml")).unwrap();
    d.write("inside.rhai", "out(file::read(\"values-link.yaml\"));\n");
    assert_eq!(
        d.talm(["run", "inside.rhai"]).ok().stdout,
        d.read("values.yaml")
    );

    // Templates: an include through a link, and a linked template itself.
    symlink(outside.join("part.tera"), d.join("templates/part.tera")).unwrap();
    d.write("templates/inc.yaml", "{% include \"part.tera\" %}\n");
    let o = d
        .talm(["template", "--offline", "-t", "templates/inc.yaml"])
        .expect()
        .replace(real.display().to_string(), "$OUTSIDE")
        .stderr("\
Error: templates/part.tera leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/part.tera
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();
    assert!(!o.stdout.contains("leaked"));
    d.remove("templates/part.tera");
    symlink(outside.join("part.tera"), d.join("templates/cp.yaml")).unwrap();
    d.talm(["template", "--offline", "-t", "templates/cp.yaml"])
        .expect()
        .replace(real.display().to_string(), "$OUTSIDE")
        .stdout("")
        .stderr("\
Error: templates/cp.yaml leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/part.tera
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();
    d.remove("templates/cp.yaml");
    d.remove("templates/inc.yaml");
    // Links that stay inside the project work for templates too.
    d.write("templates/plain.yaml", "machine:\n  type: worker\n");
    symlink(
        d.join("templates/plain.yaml"),
        d.join("templates/alias.yaml"),
    )
    .unwrap();
    let o = d
        .talm(["template", "--offline", "-t", "templates/alias.yaml"])
        .ok();
    assert!(o.stdout.contains("type: worker"), "{}", o.stdout);

    // talm([...]) runs a command line as typed, and says so.
    let help = d.talm(["help", "api", "talm"]).ok().stdout;
    assert!(help.contains("not confined to the project"), "{help}");
}
