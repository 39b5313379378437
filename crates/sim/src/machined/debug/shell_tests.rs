//! The mini shell of simulated debug containers: its commands, quoting, terminal and endings.

use super::*;

fn host() -> Host {
    let mut fs = Fs::new(0);
    fs.dir("/etc", 0o755);
    fs.file("/etc/os-release", "NAME=\"Talos\"\n", 0o644);
    fs.dir("/proc", 0o555);
    fs.kernel(
        "/proc/version",
        "Linux version 6.18.3-talos (@buildkitsandbox) (gcc (GCC) 15.2.0) #1 SMP Mon Jun 29 10:00:00 UTC 2026\n",
        0o444,
    );
    Host {
        hostname: "talos-abc-def".into(),
        fs,
    }
}

fn piped(input: &str) -> (String, Option<i32>) {
    let mut sh = Shell::new(host(), false);
    let mut out = Vec::new();
    let step = sh.input(input.as_bytes());
    out.extend(step.output);
    let exit = match step.exit {
        Some(c) => Some(c),
        None => {
            let end = sh.end();
            out.extend(end.output);
            end.exit
        }
    };
    (String::from_utf8(out).unwrap(), exit)
}

#[test]
fn commands_from_a_pipe_run_in_order_and_the_last_status_is_the_exit_code() {
    assert_eq!(
        piped("hostname\necho a  'b  c' \"d $?\"\nuname -r\nuname\n"),
        (
            "talos-abc-def\na b  c d 0\n6.18.3-talos\nLinux\n".into(),
            Some(0)
        )
    );
    assert_eq!(
        piped("uname -a"),
        (
            "Linux talos-abc-def 6.18.3-talos #1 SMP Mon Jun 29 10:00:00 UTC 2026 x86_64 Linux\n"
                .into(),
            Some(0)
        )
    );
    assert_eq!(
        piped("nope\necho $?\nfalse"),
        ("sh: nope: not found\n127\n".into(), Some(1))
    );
    assert_eq!(piped("exit 3\necho never\n"), (String::new(), Some(3)));
    assert_eq!(piped("true; exit 300"), (String::new(), Some(44)));
    assert_eq!(
        piped("exit x"),
        ("sh: exit: Illegal number: x\n".into(), Some(2))
    );
    assert_eq!(piped("# only a comment\n"), (String::new(), Some(0)));
}

#[test]
fn cat_reads_the_nodes_files_where_the_container_shares_them() {
    assert_eq!(
        piped("cat /host/etc/os-release /proc/version"),
        (
            "NAME=\"Talos\"\nLinux version 6.18.3-talos (@buildkitsandbox) (gcc (GCC) 15.2.0) #1 SMP Mon Jun 29 10:00:00 UTC 2026\n".into(),
            Some(0)
        )
    );
    assert_eq!(
        piped("cat /etc/os-release"),
        (
            "cat: can't open '/etc/os-release': No such file or directory\n".into(),
            Some(1)
        )
    );
    assert_eq!(
        piped("cat /host/etc"),
        ("cat: read error: Is a directory\n".into(), Some(1))
    );
}

#[test]
fn a_terminal_prompts_echoes_and_hangs_up_when_stdin_ends() {
    let mut sh = Shell::new(host(), true);
    assert_eq!(sh.begin().output, b"/ # ");
    let step = sh.input(b"hostnamx\x7fe\r");
    assert_eq!(
        String::from_utf8(step.output).unwrap(),
        "hostnamx\x08 \x08e\r\ntalos-abc-def\r\n/ # "
    );
    assert_eq!(step.exit, None);
    assert_eq!(sh.signal(2), None);
    assert_eq!(sh.input(b"ec\x03").output, b"ec^C\r\n/ # ".to_vec());
    assert_eq!(sh.end().exit, Some(129));
    let mut sh = Shell::new(host(), true);
    let step = sh.input(b"exit 4\r");
    assert_eq!((step.output, step.exit), (b"exit 4\r\n".to_vec(), Some(4)));
}

#[test]
fn arguments_start_a_program_a_line_or_the_shell() {
    let words = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(start_of(&[]), Start::Shell);
    assert_eq!(start_of(&words(&["/bin/sh"])), Start::Shell);
    assert_eq!(
        start_of(&words(&["sh", "-c", "exit 5"])),
        Start::Line("exit 5".into())
    );
    assert_eq!(
        start_of(&words(&["/bin/echo", "hi"])),
        Start::Program(words(&["echo", "hi"]))
    );
    assert_eq!(start_of(&words(&["bash"])), Start::NotFound("bash".into()));
    let mut sh = Shell::new(host(), false);
    let step = sh.once(&Start::Line("echo hi; exit 5".into()));
    assert_eq!((step.output, step.exit), (b"hi\n".to_vec(), Some(5)));
    let step = sh.once(&Start::Program(words(&["uname", "-q"])));
    assert_eq!(
        (step.output, step.exit),
        (b"uname: unrecognized option: q\n".to_vec(), Some(1))
    );
    assert_eq!(sh.signal(15), Some(143));
    assert_eq!(sh.signal(28), None);
}
