//! The command lines talm refuses before it reads a project or dials a node, as one table of
//! exact stderr and exit codes: talm's own errors exit 1 with a hint, and so do clap's usage
//! errors, as talosctl's cobra commands do.

use crate::common::Dir;

#[test]
fn command_lines_refused_before_any_work() {
    let d = Dir::new();
    d.refuses_each(&[
        (
            &["nosuch"],
            1,
            "Error: unknown command \"nosuch\"\n\
             hint: see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`\n",
        ),
        (
            &["apply", "-f", "x.yaml", "--timeout", "soon"],
            1,
            "Error: --timeout \"soon\" is not a duration: time: invalid duration \"soon\"\n\
             hint: give Go duration text such as 30s, 2m or 1m30s\n",
        ),
        (
            &["upgrade", "--rolling", "--wait=false"],
            1,
            "Error: cannot use --rolling and --wait=false together\n\
             hint: a roll follows each node back up and checks the cluster before the next; \
             drop --wait=false\n",
        ),
        (
            &["upgrade", "--insecure", "--wait"],
            1,
            "Error: cannot use --wait and --insecure together\n\
             hint: a node in maintenance mode cannot be followed; pass --wait=false\n",
        ),
        (
            &["rotate-ca", "--nodes", "10.0.0.1,10.0.0.2"],
            1,
            "Error: failed to read talosconfig $DIR/talosconfig: No such file or directory \
             (os error 2)\n\
             hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to \
             open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in \
             maintenance mode\n",
        ),
        (
            &["apply", "--mode", "sometimes"],
            1,
            "error: invalid value 'sometimes' for '--mode <MODE>'\n  \
             [possible values: auto, no-reboot, reboot, staged, try]\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["upgrade", "--rolling", "--max-parallel", "150%"],
            1,
            "error: invalid value '150%' for '--max-parallel <N|N%>': \"150%\" is neither a \
             number of nodes (1 or more) nor a percentage from 1% to 100%\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["upgrade", "--reboot-mode", "force"],
            1,
            "error: invalid value 'force' for '--reboot-mode <REBOOT_MODE>'\n  \
             [possible values: default, powercycle]\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["reset", "--wipe-mode", "everything"],
            1,
            "error: invalid value 'everything' for '--wipe-mode <WIPE_MODE>'\n  \
             [possible values: all, system-disk, user-disks]\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["get", "members", "-o", "wide"],
            1,
            "error: invalid value 'wide' for '--output <OUTPUT>': output format \"wide\" is not \
             supported\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["wipe", "disk", "vdb", "--method", "fast"],
            1,
            "error: invalid value 'fast' for '--method <METHOD>': invalid wipe method \"fast\"\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["apply", "--nodes", "10.0.0.1;reboot"],
            1,
            "error: invalid value '10.0.0.1;reboot' for '--nodes <IP>': \"10.0.0.1;reboot\" is \
             not a node address: \"10.0.0.1;reboot\" is neither an IP address nor a DNS name \
             (letters, digits, '-' and '.', labels of at most 63)\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["apply", "--endpoints", "https://10.0.0.1:50000"],
            1,
            "error: invalid value 'https://10.0.0.1:50000' for '--endpoints <IP>': \
             \"https://10.0.0.1:50000\" is not a node address: it holds a scheme or a path: give \
             the host (and port) only\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["completion", "tcsh"],
            1,
            "error: invalid value 'tcsh' for '<SHELL>'\n  \
             [possible values: bash, elvish, fish, powershell, zsh]\n\n  \
             tip: a similar value exists: 'zsh'\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["run", "--list", "foo.rhai"],
            1,
            "error: the argument '--list' cannot be used with '[FILE]'\n\n\
             Usage: talm run --list [FILE] [ARGS]...\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["get"],
            1,
            "error: the following required arguments were not provided:\n  <KIND>\n\n\
             Usage: talm get <KIND> [ID]\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["upgrade", "--resume"],
            1,
            "error: the following required arguments were not provided:\n  --rolling\n\n\
             Usage: talm upgrade --rolling --resume\n\n\
             For more information, try '--help'.\n",
        ),
    ]);
}
