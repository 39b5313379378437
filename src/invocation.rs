//! From parsed flags to what runs: a pure `from_cli(Cli) -> Invocation` (table-tested) decides
//! the script, its `ARGS` (the flag structs serialised), the project it needs and the session
//! its natives connect with; `crate::dispatch` then runs it. A new command is its clap struct,
//! its script and one line in [`from_cli`].

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::change::{MetaCommand, WipeCommand};
use crate::cli::inspect::{ImageCommand, InspectCommand};
use crate::cli::{Cli, Command, Connection, GenCommand, ProjectFlags};
use crate::error::hinted;

/// What one command line asks for.
#[derive(Debug, PartialEq)]
pub struct Invocation {
    pub action: Action,
    pub project: Project,
    /// How the session's natives reach nodes; `None` for commands that talk to none.
    pub session: Option<SessionSpec>,
}

/// What runs.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// A bundled script, `scripts/<script>.rhai`, with its `ARGS` (`root` is filled in by run).
    Script {
        script: &'static str,
        args: Value,
        prep: Prep,
    },
    /// `talm run --list`: the bundled playbooks.
    ListPlaybooks,
    /// A playbook file, or a bundled playbook's name (`talm run`).
    Playbook {
        file: String,
        args: Value,
        max_ops: Option<u64>,
    },
    /// A project script, `talm NAME` → `<root>/scripts/NAME.rhai`.
    External {
        name: String,
        args: Value,
    },
    Repl {
        args: Value,
        max_ops: Option<u64>,
    },
    Help(Vec<String>),
    Completion {
        shell: clap_complete::Shell,
        descriptions: bool,
    },
    /// `talm demo`: its folder (a temporary one when `None`) and the nodes' addresses.
    Demo {
        dir: Option<String>,
        nodes: Vec<String>,
    },
    Sim(crate::sim::serve::Options),
    /// Nothing to do (`apply` without files, as the Go talm).
    Nothing,
}

/// What a script needs done with its flags once the project is known.
#[derive(Debug, PartialEq)]
pub enum Prep {
    None,
    /// `--talosconfig` is written inside the project: made relative to its root.
    TalosconfigInsideRoot,
    /// A file named on the command line is read here (scripts only read inside projects)
    /// into `ARGS.secrets_text`.
    ReadSecrets(Option<String>),
    /// Patches given as `@FILE` are read here (the others are inline) into
    /// `ARGS.patch_texts`, in order.
    ReadPatches(Vec<String>),
}

/// The project a command works in.
#[derive(Debug, PartialEq)]
pub enum Project {
    /// None (gen, scan, sim, help...).
    None,
    /// `init`: the script creates or checks it.
    Create,
    /// There must be one: the first `-f` file's, else at or above `--root`.
    Required {
        flags: ProjectFlags,
        files: Vec<String>,
    },
    /// `migrate`: there must be one, found like `Required`, but its templates may be the Go
    /// talm's: no drift check (the migration replaces what it would compare).
    Adopt(ProjectFlags),
    /// When there is one (node commands, playbooks): same search, drift checked if found.
    Optional {
        flags: ProjectFlags,
        files: Vec<String>,
    },
}

impl PartialEq for ProjectFlags {
    fn eq(&self, o: &ProjectFlags) -> bool {
        self.root == o.root && self.strict_charts == o.strict_charts
    }
}

/// The connection part of a session, from the command line.
#[derive(Debug, PartialEq, Default)]
pub struct SessionSpec {
    pub talosconfig: Option<String>,
    pub context: String,
    pub timeout: Option<Duration>,
    /// Files the command writes outside any project, as the command line names them.
    pub outputs: Vec<String>,
    /// `--skip-verify`: the node's certificate is not checked; the client's is presented.
    pub skip_verify: bool,
}

impl SessionSpec {
    fn of(c: &Connection) -> Result<SessionSpec> {
        let timeout = match &c.call_timeout {
            None => None,
            Some(t) => Some(t.nonzero(
                "--call-timeout",
                "every connection and call would give up at once; give e.g. 30s or 2m",
            )?),
        };
        Ok(SessionSpec {
            talosconfig: c.talosconfig.clone(),
            context: c.context.clone().unwrap_or_default(),
            timeout,
            outputs: Vec::new(),
            skip_verify: c.skip_verify,
        })
    }
}

fn args_of(flags: &impl Serialize) -> Result<Value> {
    Ok(serde_json::to_value(flags)?)
}

/// `flags` serialised, with `extra` keys added.
fn with(flags: &impl Serialize, extra: Value) -> Result<Value> {
    let mut v = args_of(flags)?;
    if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
        m.extend(e);
    }
    Ok(v)
}

fn script(script: &'static str, args: Value) -> Action {
    Action::Script {
        script,
        args,
        prep: Prep::None,
    }
}

/// A node command: its script, its flags, the project of its `-f` files if any.
fn node_command(
    name: &'static str,
    args: Value,
    node: &crate::cli::NodeArgs,
) -> Result<Invocation> {
    Ok(Invocation {
        action: script(name, args),
        project: Project::Optional {
            flags: node.project.clone(),
            files: node.files.clone(),
        },
        session: Some(SessionSpec::of(&node.conn)?),
    })
}

/// A command that asks no node, reading the project it runs in if there is one.
fn local_project(
    name: &'static str,
    args: Value,
    project: &crate::cli::ProjectFlags,
) -> Invocation {
    Invocation {
        action: script(name, args),
        project: Project::Optional {
            flags: project.clone(),
            files: Vec::new(),
        },
        session: None,
    }
}

/// `inv` allowed to write the file `output` the command line names.
fn writing(mut inv: Invocation, output: &str) -> Invocation {
    if let Some(s) = &mut inv.session {
        s.outputs.push(output.to_string());
    }
    inv
}

/// Where `kubeconfig --login` writes: the path given, else talosctl's default (`$KUBECONFIG`
/// naming one file, else `~/.kube/config`); `None` without `--login` (the project's file).
fn kubeconfig_target(k: &crate::cli::KubeconfigArgs) -> Result<Option<String>> {
    if !k.login {
        if k.path.is_some() {
            return Err(hinted(
                "talm kubeconfig writes to project root by default; positional path is not consumed in this mode",
                "to write elsewhere, merge into your own kubeconfig: talm kubeconfig --login PATH",
            ));
        }
        return Ok(None);
    }
    if let Some(p) = &k.path {
        return Ok(Some(p.clone()));
    }
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        let files: Vec<_> = std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        match files.len() {
            0 => {}
            1 => return Ok(Some(files[0].display().to_string())),
            _ => {
                return Err(hinted(
                    "multiple kubeconfig files defined",
                    "name the file to merge into: talm kubeconfig --login PATH",
                ))
            }
        }
    }
    match std::env::var_os("HOME") {
        Some(home) => Ok(Some(
            std::path::Path::new(&home)
                .join(".kube/config")
                .display()
                .to_string(),
        )),
        None => Err(hinted(
            "cannot find your kubeconfig: HOME is not set",
            "name the file to merge into: talm kubeconfig --login PATH",
        )),
    }
}

/// Decides what the command line runs; reads nothing from disk.
pub fn from_cli(cli: Cli) -> Result<Invocation> {
    let none = |action| Invocation {
        action,
        project: Project::None,
        session: None,
    };
    Ok(match cli.command {
        Command::Init(i) => Invocation {
            action: script(
                "init",
                with(
                    &i,
                    json!({
                        "root": i.project.root.clone().unwrap_or_else(|| ".".into()),
                        "root_explicit": i.project.root.is_some(),
                        "version": crate::version::chart_version(),
                    }),
                )?,
            ),
            project: Project::Create,
            session: None,
        },
        Command::Migrate(m) => Invocation {
            action: script("migrate", args_of(&m)?),
            project: Project::Adopt(ProjectFlags {
                root: m.root.clone(),
                strict_charts: false,
            }),
            session: Some(SessionSpec::of(&Connection {
                talosconfig: m.talosconfig.clone(),
                context: m.context.clone(),
                call_timeout: m.call_timeout.clone(),
                ..Connection::default()
            })?),
        },
        Command::Talosconfig(t) => Invocation {
            action: Action::Script {
                script: "talosconfig",
                args: args_of(&t)?,
                prep: Prep::TalosconfigInsideRoot,
            },
            project: Project::Required {
                flags: t.project.clone(),
                files: Vec::new(),
            },
            session: None,
        },
        Command::Template(t) => Invocation {
            action: script("template", args_of(&t)?),
            project: Project::Required {
                flags: t.project.clone(),
                files: t.files.clone(),
            },
            session: Some(SessionSpec::of(&t.conn)?),
        },
        Command::Gen(GenCommand::Config(g)) => none(Action::Script {
            script: "gen_config",
            args: args_of(&g)?,
            prep: Prep::ReadSecrets(g.with_secrets.clone()),
        }),
        Command::Apply(a) if a.files.is_empty() => none(Action::Nothing),
        Command::Apply(a) => {
            a.timeout.nonzero(
                "--timeout",
                "--timeout is how long a try-mode config stays before it is rolled back; give e.g. 1m",
            )?;
            Invocation {
                action: script("apply", args_of(&a)?),
                project: Project::Optional {
                    flags: a.project.clone(),
                    files: a.files.clone(),
                },
                session: Some(SessionSpec::of(&a.conn)?),
            }
        }
        Command::Upgrade(u) => {
            if u.wait {
                if u.insecure {
                    return Err(hinted(
                        "cannot use --wait and --insecure together",
                        "a node in maintenance mode cannot be followed; pass --wait=false",
                    ));
                }
                u.timeout.nonzero("--timeout", "the upgrade waits for each node up to --timeout; to not wait at all, pass --wait=false")?;
            }
            if u.rolling {
                if !u.wait {
                    return Err(hinted(
                        "cannot use --rolling and --wait=false together",
                        "a roll follows each node back up and checks the cluster before the next; drop --wait=false",
                    ));
                }
                u.health_timeout.nonzero(
                    "--health-timeout",
                    "the health check after each node may take up to --health-timeout; give e.g. 10m",
                )?;
            }
            let mut session = SessionSpec::of(&u.conn)?;
            // The -f files get the new image written back into them.
            session.outputs.extend(u.files.iter().cloned());
            Invocation {
                action: script("upgrade", args_of(&u)?),
                project: Project::Optional {
                    flags: u.project.clone(),
                    files: u.files.clone(),
                },
                session: Some(session),
            }
        }
        Command::Version(v) if v.client_only => none(script(
            "version",
            with(&v, json!({ "client": crate::version::client_block() }))?,
        )),
        Command::Version(v) => node_command(
            "version",
            with(&v, json!({ "client": crate::version::client_block() }))?,
            &v.node,
        )?,
        Command::Get(g) => node_command("get", args_of(&g)?, &g.node)?,
        Command::Kubeconfig(k) => {
            let target = kubeconfig_target(&k)?;
            let mut inv = node_command(
                "kubeconfig",
                with(&k, json!({ "login_path": target }))?,
                &k.node,
            )?;
            if let (Some(s), Some(t)) = (&mut inv.session, target) {
                s.outputs.push(t);
            }
            inv
        }
        Command::Reboot(r) => node_command("reboot", args_of(&r)?, &r.node)?,
        Command::Cordon(a) => node_command("cordon", args_of(&a)?, &a.node)?,
        Command::Uncordon(a) => node_command("uncordon", args_of(&a)?, &a.node)?,
        Command::Reset(r) => node_command("reset", args_of(&r)?, &r.node)?,
        Command::Logs(l) => node_command("logs", args_of(&l)?, &l.node)?,
        Command::Dmesg(d) => node_command(
            "logs",
            with(&d, json!({ "service": "kernel", "kubernetes": false }))?,
            &d.node,
        )?,
        Command::Events(e) => node_command("events", args_of(&e)?, &e.node)?,
        Command::Service(a) => node_command("service", args_of(&a)?, &a.node)?,
        Command::Containers(a) => node_command("containers", args_of(&a)?, &a.node)?,
        Command::Stats(a) => node_command("stats", args_of(&a)?, &a.node)?,
        Command::Processes(a) => node_command("processes", args_of(&a)?, &a.node)?,
        Command::Memory(a) => node_command("memory", args_of(&a)?, &a.node)?,
        Command::Mounts(a) => node_command("mounts", args_of(&a)?, &a.node)?,
        Command::Netstat(a) => node_command("netstat", args_of(&a)?, &a.node)?,
        Command::Read(a) => node_command("read", args_of(&a)?, &a.node)?,
        Command::Debug(a) => node_command("debug", args_of(&a)?, &a.node)?,
        Command::List(a) => node_command("list", args_of(&a)?, &a.node)?,
        Command::Copy(a) => node_command("copy", args_of(&a)?, &a.node)?,
        Command::Usage(a) => node_command("usage", args_of(&a)?, &a.node)?,
        Command::Time(a) => node_command("time", args_of(&a)?, &a.node)?,
        Command::Cgroups(a) => node_command("cgroups", args_of(&a)?, &a.node)?,
        Command::Inspect(InspectCommand::Dependencies(a)) => {
            node_command("inspect_dependencies", args_of(&a)?, &a.node)?
        }
        Command::Image(ImageCommand::List(a)) => node_command("image_list", args_of(&a)?, &a.node)?,
        Command::Image(ImageCommand::Pull(a)) => node_command("image_pull", args_of(&a)?, &a.node)?,
        Command::Image(ImageCommand::K8sBundle(a)) => local_project(
            "image_bundle",
            with(&a, json!({ "bundle": "k8s" }))?,
            &a.project,
        ),
        Command::Image(ImageCommand::TalosBundle(a)) => local_project(
            "image_bundle",
            with(&a, json!({ "bundle": "talos" }))?,
            &a.project,
        ),
        Command::Image(ImageCommand::Remove(a)) => {
            node_command("image_remove", args_of(&a)?, &a.node)?
        }
        Command::Pcap(a) => {
            let inv = node_command("pcap", with(&a, json!({ "insecure": false }))?, &a.node())?;
            match a.output.as_str() {
                "" | "-" => inv,
                file => writing(inv, file),
            }
        }
        Command::Restart(a) => node_command("restart", args_of(&a)?, &a.node)?,
        Command::Rollback(r) => node_command("rollback", args_of(&r)?, &r.node)?,
        Command::Shutdown(a) => node_command("shutdown", args_of(&a)?, &a.node)?,
        Command::Wipe(WipeCommand::Disk(a)) => node_command("wipe_disk", args_of(&a)?, &a.node)?,
        Command::Meta(MetaCommand::Write(a)) => {
            node_command("meta", with(&a, json!({ "action": "write" }))?, &a.node)?
        }
        Command::Meta(MetaCommand::Delete(a)) => {
            node_command("meta", with(&a, json!({ "action": "delete" }))?, &a.node)?
        }
        Command::Edit(a) => node_command("edit", args_of(&a)?, &a.node)?,
        Command::Patch(a) => {
            let mut inv = node_command("patch", args_of(&a)?, &a.node)?;
            if let Action::Script { prep, .. } = &mut inv.action {
                *prep = Prep::ReadPatches(a.patch_args());
            }
            inv
        }
        Command::Dashboard(a) => {
            a.update_interval.nonzero(
                "--update-interval",
                "the screens would never wait; give e.g. 1s or 3s",
            )?;
            node_command("dashboard", args_of(&a)?, &a.node)?
        }
        Command::Support(s) => writing(
            node_command(
                "support",
                with(&s, json!({ "client": crate::version::client_block() }))?,
                &s.node,
            )?,
            &s.output,
        ),
        Command::Bootstrap(b) => match &b.recover_from {
            Some(file) => writing(node_command("bootstrap", args_of(&b)?, &b.node)?, file),
            None => node_command("bootstrap", args_of(&b)?, &b.node)?,
        },
        Command::Health(h) => node_command("health", args_of(&h)?, &h.node)?,
        Command::RotateCa(r) => node_command("rotate_ca", args_of(&r)?, &r.node)?,
        Command::Etcd(e) => {
            let (action, node, extra) = e.parts();
            let mut args = with(node, extra)?;
            args["action"] = json!(action);
            let inv = node_command("etcd", args, node)?;
            match &e {
                crate::cli::cluster::EtcdCommand::Snapshot(s) => writing(inv, &s.path),
                _ => inv,
            }
        }
        Command::Discover(n) => node_command("discover", args_of(&n)?, &n)?,
        Command::Scan(s) => {
            s.timeout.nonzero(
                "--timeout",
                "--timeout is how long each address gets to answer; give e.g. 500ms",
            )?;
            none(script("scan", args_of(&s)?))
        }
        Command::Run(r) if r.list => none(Action::ListPlaybooks),
        Command::Run(r) => Invocation {
            action: Action::Playbook {
                file: r.file.clone().unwrap_or_default(),
                args: args_of(&r)?,
                max_ops: r.limits.max_ops,
            },
            project: Project::Optional {
                flags: r.project.clone(),
                files: Vec::new(),
            },
            session: Some(SessionSpec::of(&r.conn)?),
        },
        Command::Repl(r) => Invocation {
            action: Action::Repl {
                args: args_of(&r)?,
                max_ops: r.limits.max_ops,
            },
            project: Project::Optional {
                flags: r.project.clone(),
                files: Vec::new(),
            },
            session: Some(SessionSpec::of(&r.conn)?),
        },
        Command::External(words) => {
            let Some((name, rest)) = words.split_first() else {
                return Err(hinted("no command given", "see `talm --help`"));
            };
            Invocation {
                action: Action::External {
                    name: name.clone(),
                    args: json!({ "args": rest, "nodes": [] }),
                },
                project: Project::Optional {
                    flags: ProjectFlags::default(),
                    files: Vec::new(),
                },
                session: Some(SessionSpec::default()),
            }
        }
        Command::Demo { dir, nodes } => none(Action::Demo { dir, nodes }),
        Command::Help { topic } => none(Action::Help(topic)),
        Command::Completion {
            shell,
            no_descriptions,
        } => none(Action::Completion {
            shell,
            descriptions: !no_descriptions,
        }),
        Command::Sim(s) => none(Action::Sim(s.options())),
    })
}

#[cfg(test)]
#[path = "invocation_tests.rs"]
mod tests;
