use std::sync::Arc;

use super::*;
use crate::render::pipeline;
use talm_wire::facts::Facts;

thread_local! {
    /// How many times this thread listed a project's template files.
    pub static LISTINGS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the kept project at `root` is watched for changes.
fn watched(root: &Path) -> bool {
    cache()
        .iter()
        .find(|e| e.root == key(root))
        .is_some_and(|e| e.watch.is_some())
}

fn listings() -> usize {
    LISTINGS.with(|n| n.get())
}

/// The cache is the process's: tests that count on their entry staying kept, or that push
/// others out, take turns.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        write(dir.path(), rel, text);
    }
    dir
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Makes the kept entry of `root` look read long after its files last changed, as in a
/// session where the files were written more than [`SETTLE`] before the render.
fn settle(root: &Path) {
    let mut kept = cache();
    let e = kept.iter_mut().find(|e| e.root == *root).unwrap();
    e.read_at = SystemTime::now() + SETTLE + Duration::from_secs(1);
    assert!(e.fresh(&list(root, &mut None).unwrap()));
}

fn render(root: &Path, template: &str, facts: &str) -> String {
    pipeline::render(&pipeline::Request {
        root,
        templates: vec![template.into()],
        facts: Arc::new(Facts::parse(facts, "f").unwrap()),
        values: serde_yaml_ng::from_str("v: 1").unwrap(),
        chart_name: "c".into(),
        chart_version: "0.1.0".into(),
        talos_version: "v1.12".into(),
        kubernetes_version: String::new(),
    })
    .unwrap()
}

const ETH0: &str = "resources:\n  links:\n    - metadata: {id: eth0}\n";
const ETH9: &str = "resources:\n  links:\n    - metadata: {id: eth9}\n";
const CONTEXT: &str = "#{ link: lookup(\"links\", \"\", \"\").items[0].metadata.id, x: 1 }";

#[test]
fn one_compiled_project_serves_every_node_until_a_file_changes() {
    let _turn = turn();
    let dir = project(&[
        ("templates/_context.rhai", CONTEXT),
        ("templates/cp.yaml", "a: {{ node.link }}\nx: {{ node.x }}\n"),
        (
            "templates/r.rhai",
            "#{ b: lookup(\"links\", \"\", \"\").items[0].metadata.id }",
        ),
    ]);
    let root = dir.path();
    let first = load(root).unwrap();
    // Each node's facts reach the same compiled templates and preset logic.
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "a: eth0\nx: 1\n");
    assert_eq!(render(root, "templates/cp.yaml", ETH9), "a: eth9\nx: 1\n");
    assert_eq!(render(root, "templates/r.rhai", ETH9), "b: eth9\n");
    assert_eq!(render(root, "templates/r.rhai", ETH0), "b: eth0\n");
    let again = load(root).unwrap();
    assert!(Arc::ptr_eq(&first, &again), "recompiled without a change");
    assert!(again.context.as_ref().unwrap().compiled());
    assert!(again.scripts["r.rhai"].compiled());

    // A rewrite with the same text keeps the compiled project.
    write(
        root,
        "templates/cp.yaml",
        "a: {{ node.link }}\nx: {{ node.x }}\n",
    );
    assert!(Arc::ptr_eq(&first, &load(root).unwrap()));

    // Edits right after the last render, of the same size, are seen: a template, the preset
    // logic, a Rhai template; and a new template.
    write(
        root,
        "templates/cp.yaml",
        "A: {{ node.link }}\nx: {{ node.x }}\n",
    );
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "A: eth0\nx: 1\n");
    write(
        root,
        "templates/_context.rhai",
        &CONTEXT.replace("x: 1", "x: 2"),
    );
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "A: eth0\nx: 2\n");
    write(
        root,
        "templates/r.rhai",
        "#{ B: lookup(\"links\", \"\", \"\").items[0].metadata.id }",
    );
    assert_eq!(render(root, "templates/r.rhai", ETH0), "B: eth0\n");
    write(root, "templates/new.yaml", "n: {{ values.v }}\n");
    assert_eq!(render(root, "templates/new.yaml", ETH0), "n: 1\n");
    assert!(!Arc::ptr_eq(&first, &load(root).unwrap()));
}

#[test]
fn settled_files_are_trusted_by_their_stamps_and_edits_still_seen() {
    let _turn = turn();
    let dir = project(&[("templates/cp.yaml", "a: {{ values.v }}\n")]);
    let root = dir.path();
    let first = load(root).unwrap();
    settle(root);
    assert!(Arc::ptr_eq(&first, &load(root).unwrap()));
    write(root, "templates/cp.yaml", "a: {{ values.v }} # edited\n");
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "a: 1 # edited\n");
    assert!(!Arc::ptr_eq(&first, &load(root).unwrap()));
    // A removed template is gone too.
    settle(root);
    std::fs::remove_file(root.join("templates/cp.yaml")).unwrap();
    assert!(load(root)
        .unwrap()
        .tera()
        .unwrap()
        .render("cp.yaml", tera::Context::new(), &Arc::new(Facts::empty()))
        .is_err());
}

#[test]
fn two_projects_never_share() {
    let _turn = turn();
    let files = [("templates/cp.yaml", "a: {{ values.v }}\n")];
    let (a, b) = (project(&files), project(&files));
    let (ca, cb) = (load(a.path()).unwrap(), load(b.path()).unwrap());
    assert!(!Arc::ptr_eq(&ca, &cb));
    write(b.path(), "templates/cp.yaml", "b: {{ values.v }}\n");
    assert_eq!(render(a.path(), "templates/cp.yaml", ETH0), "a: 1\n");
    assert_eq!(render(b.path(), "templates/cp.yaml", ETH0), "b: 1\n");
}

#[test]
fn only_the_last_projects_are_kept() {
    let _turn = turn();
    let files = [("templates/cp.yaml", "a: 1\n")];
    let first = project(&files);
    let compiled = load(first.path()).unwrap();
    let others: Vec<_> = (0..KEEP).map(|_| project(&files)).collect();
    for o in &others {
        load(o.path()).unwrap();
    }
    assert!(cache().len() <= KEEP);
    assert!(!Arc::ptr_eq(&compiled, &load(first.path()).unwrap()));
}

#[test]
fn a_template_that_does_not_compile_names_itself_and_is_retried() {
    let dir = project(&[("templates/cp.yaml", "a: {{ oops \n")]);
    let err = load(dir.path()).err().unwrap();
    assert!(err.to_string().contains("cp.yaml:1:"), "{err}");
    write(dir.path(), "templates/cp.yaml", "a: {{ values.v }}\n");
    assert_eq!(render(dir.path(), "templates/cp.yaml", ETH0), "a: 1\n");
}

/// A project whose template prints the link its preset logic found.
fn linked_project() -> tempfile::TempDir {
    project(&[
        ("templates/_context.rhai", CONTEXT),
        ("templates/cp.yaml", "a: {{ node.link }}\n"),
    ])
}

#[test]
fn a_prefetched_project_is_compiled_once_and_the_render_waits_for_it() {
    let _turn = turn();
    let dir = linked_project();
    prefetch(dir.path());
    // The render takes what the prefetch compiled: its preset logic compiled already, the
    // same compiled project, nothing left waiting.
    let compiled = load(dir.path()).unwrap();
    assert!(compiled.context.as_ref().unwrap().compiled());
    // What a one-shot command renders once is not watched (see `watched_projects_...` below).
    assert!(!watched(dir.path()));
    assert!(ahead().iter().all(|(r, _)| r != &key(dir.path())));
    assert_eq!(render(dir.path(), "templates/cp.yaml", ETH0), "a: eth0\n");
    assert!(Arc::ptr_eq(&compiled, &load(dir.path()).unwrap()));
    // A project kept already starts no thread.
    prefetch(dir.path());
    assert!(ahead().iter().all(|(r, _)| r != &key(dir.path())));
}

#[test]
fn renders_that_start_during_a_prefetch_wait_for_it_rather_than_compile() {
    let _turn = turn();
    let dir = linked_project();
    prefetch(dir.path());
    // A second prefetch of the same project while the first goes on starts nothing.
    prefetch(dir.path());
    let going = ahead()
        .iter()
        .filter(|(r, _)| r == &key(dir.path()))
        .count();
    assert!(going <= 1, "{going} compiles of one project");
    let loads: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| load(dir.path()).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(loads.iter().all(|c| Arc::ptr_eq(c, &loads[0])));
    assert!(loads[0].context.as_ref().unwrap().compiled());
}

#[test]
fn a_render_compiles_what_a_prefetch_that_has_read_the_project_has_not_started() {
    let _turn = turn();
    let dir = linked_project();
    // A compile ahead that has read and kept the project and then stalls (busy with the
    // preset logic, say): the render compiles the Tera templates and the preset logic itself
    // instead of idling, then still waits for the compile ahead to end.
    load_now(dir.path(), false).unwrap();
    let mark = Arc::new(Ahead::default());
    ahead().push((key(dir.path()), mark.clone()));
    mark.set(|p| p.read = true);
    let compiled = cache()
        .iter()
        .find(|e| e.root == key(dir.path()))
        .map(|e| e.compiled.clone())
        .unwrap();
    assert!(compiled.tera.get().is_none());
    let shared = || compiled.tera.get().is_some() && compiled.context.as_ref().unwrap().compiled();
    std::thread::scope(|s| {
        let render = s.spawn(|| load(dir.path()).unwrap());
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while !shared() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (shared, waited) = (shared(), !render.is_finished());
        // The compile ahead ends, so that a failing render ends too.
        ahead().retain(|(_, m)| !Arc::ptr_eq(m, &mark));
        mark.set(|p| p.done = true);
        assert!(Arc::ptr_eq(&render.join().unwrap(), &compiled));
        assert!(shared, "the render left the compile idle");
        assert!(waited, "the render did not wait for the compile ahead");
    });
}

#[test]
fn a_prefetch_that_fails_leaves_the_error_to_the_render() {
    let dir = project(&[("templates/cp.yaml", "a: {{ oops \n")]);
    prefetch(dir.path());
    let err = load(dir.path()).err().unwrap();
    assert!(err.to_string().contains("cp.yaml:1:"), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn watched_projects_render_without_listing_and_still_see_every_edit() {
    let _turn = turn();
    let dir = project(&[
        (
            "templates/cp.yaml",
            "{% include \"talm/sub/h.tera\" %}\nb: {{ node.x }}\n",
        ),
        ("charts/talm/templates/_context.rhai", "#{ x: 1 }"),
        ("charts/talm/templates/sub/h.tera", "a: 1"),
    ]);
    let root = dir.path();
    let first = load(root).unwrap();
    // Rendered once, the project is not watched: a command that renders once would pay for the
    // watch at its exit. The second render lists the files, watching them.
    assert!(!watched(root));
    let before = listings();
    assert!(Arc::ptr_eq(&first, &load(root).unwrap()));
    assert!(watched(root));
    assert_eq!(listings(), before + 1);
    for _ in 0..3 {
        assert!(Arc::ptr_eq(&first, &load(root).unwrap()));
    }
    assert_eq!(listings(), before + 1, "a quiet watch needs no listing");
    // Edits right away, of the same size, in either folder and below, are seen.
    write(root, "charts/talm/templates/sub/h.tera", "a: 2");
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "a: 2\nb: 1\n");
    write(root, "charts/talm/templates/_context.rhai", "#{ x: 3 }");
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "a: 2\nb: 3\n");
    write(
        root,
        "templates/cp.yaml",
        "{% include \"talm/sub/h.tera\" %}\nc: {{ node.x }}\n",
    );
    assert_eq!(render(root, "templates/cp.yaml", ETH0), "a: 2\nc: 3\n");
    // A file in a new folder, then an edit inside it.
    write(root, "templates/more/w.yaml", "w: 1\n");
    assert_eq!(render(root, "templates/more/w.yaml", ETH0), "w: 1\n");
    write(root, "templates/more/w.yaml", "w: 2\n");
    assert_eq!(render(root, "templates/more/w.yaml", ETH0), "w: 2\n");
    // An edit through another name of the same file.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().join("w.yaml");
    std::fs::hard_link(root.join("templates/more/w.yaml"), &other).unwrap();
    assert_eq!(render(root, "templates/more/w.yaml", ETH0), "w: 2\n");
    std::fs::write(&other, "w: 3\n").unwrap();
    assert_eq!(render(root, "templates/more/w.yaml", ETH0), "w: 3\n");
    // The watch is trusted for a while only: then the files are listed again.
    let kept = load(root).unwrap();
    let before = listings();
    std::thread::sleep(crate::render::watch::RECHECK);
    assert!(Arc::ptr_eq(&kept, &load(root).unwrap()));
    assert_eq!(listings(), before + 1);
}
