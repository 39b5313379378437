//! A small builder for driving the real `talm` binary in a temporary folder.
#![allow(dead_code)]

pub mod cluster;
pub mod expect;
pub mod kube;
pub mod net;
pub mod sim;
pub mod streaming;
pub mod tty;
pub mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const STABILITY_SECRETS: &str = include_str!("../../fixtures/talos/stability/secrets.yaml");
/// The node of the Go presets' golden renders, as a `--facts` file.
pub const GOLDEN_FACTS: &str = include_str!("../../fixtures/talm-golden/facts.yaml");

/// The five DRBD/LINSTOR sysctls talm's cozystack preset adds to the Go talm's output (its golden
/// renders and its v0.33.1 release).
pub const DRBD_SYSCTLS: [(&str, &str); 5] = [
    ("net.ipv4.ip_local_port_range", "16384 65535"),
    ("net.ipv4.ip_local_reserved_ports", "30000-32767"),
    ("net.ipv4.tcp_tw_reuse", "1"),
    ("net.ipv4.tcp_syn_retries", "4"),
    ("net.ipv4.tcp_retries2", "8"),
];

/// The non-empty YAML documents of a text.
pub fn yaml_docs(text: &str) -> Vec<serde_yaml_ng::Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &serde_yaml_ng::Value| !v.is_null())
        .collect()
}

/// One column of a table as talosctl lays it out, for expected text built around addresses from
/// `net` (whose lengths vary): the returned function pads a cell to the widest of `cells` (the
/// header among them) plus `gap` spaces — 3 for Go's tabwriter, 2 for columnize. A cell that is
/// not one of `cells` is a mistake in the test and panics.
pub fn column(gap: usize, cells: &[&str]) -> impl Fn(&str) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
    let width = cells.iter().map(|c| c.chars().count()).max().unwrap_or(0) + gap;
    move |cell| {
        assert!(
            cells.iter().any(|c| c == cell),
            "{cell:?} is not a cell of the column {cells:?}"
        );
        format!("{cell:<width$}")
    }
}

/// Verifies that `cert` was signed by `ca`'s key (Ed25519 or ECDSA P-256).
pub fn verify_signed_by(
    cert: &x509_parser::certificate::X509Certificate<'_>,
    ca: &x509_parser::certificate::X509Certificate<'_>,
) {
    use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1, ED25519};
    let spki = ca.public_key();
    let key = spki.subject_public_key.data.as_ref();
    let alg: &dyn aws_lc_rs::signature::VerificationAlgorithm =
        if spki.algorithm.algorithm.to_id_string() == "1.3.101.112" {
            &ED25519
        } else {
            &ECDSA_P256_SHA256_ASN1
        };
    UnparsedPublicKey::new(alg, key)
        .verify(
            cert.tbs_certificate.as_ref(),
            cert.signature_value.data.as_ref(),
        )
        .expect("signature verifies with the issuer's key");
}

/// The client half of `talm version`'s report: the Talos machinery talm speaks, and this
/// machine's platform as Go names it.
pub fn version_client() -> String {
    let c = talm::version::client_block();
    format!(
        "Client:\n\tTag:         v1.13.7\n\tSHA:         undefined\n\tBuilt:       \n\tGo version:  none (talm {} is Rust)\n\tOS/Arch:     {}/{}\n",
        env!("CARGO_PKG_VERSION"),
        c["os"].as_str().unwrap(),
        c["arch"].as_str().unwrap()
    )
}

/// The server half of `talm version`'s report for a configured simulated node at `$A1`.
pub const VERSION_SIM_SERVER: &str = "Server:\n\tNODE:        $A1\n\tTag:         v1.13.7\n\tSHA:         simulated\n\tBuilt:       \n\tGo version:  go1.26.5\n\tOS/Arch:     linux/amd64\n\tEnabled:     RBAC\n";

/// A temporary working folder for one test.
pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.join(rel).exists()
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.join(rel)).unwrap();
    }

    pub fn mode(&self, rel: &str) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(self.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    /// Every file below the folder with its content: a snapshot to prove nothing changed.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                if p.is_dir() {
                    out.insert(format!("{rel}/"), Vec::new());
                    walk(base, &p, out);
                } else {
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.path(), self.path(), &mut out);
        out
    }

    /// `talm` with this folder as the working directory.
    pub fn talm<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.talm_in(".", args)
    }

    /// `talm` run from a sub-folder.
    pub fn talm_in<I, S>(&self, sub: &str, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut cmd = assert_cmd::Command::cargo_bin("talm").unwrap();
        cmd.current_dir(self.join(sub))
            .args(&args)
            .env_remove("TALM_PRESETS_DIR");
        Run {
            cmd,
            dir: Some(self.path().to_owned()),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// `talm` whose files may grow to `bytes` at most (RLIMIT_FSIZE), with SIGXFSZ ignored so a
    /// write past the limit fails with EFBIG (File too large) instead of killing it: a disk
    /// that takes no more, without filling one.
    pub fn talm_file_size_limit<I, S>(&self, bytes: u64, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        use std::os::unix::process::CommandExt;
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_talm"));
        cmd.current_dir(self.path())
            .args(&args)
            .env_remove("TALM_PRESETS_DIR");
        // SAFETY: between fork and exec the child calls only setrlimit and signal, which are
        // async-signal-safe, and touches no memory but the copied `bytes`.
        unsafe {
            cmd.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Run {
            cmd: assert_cmd::Command::from_std(cmd),
            dir: Some(self.path().to_owned()),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// Runs `talm` under a pseudo-terminal (util-linux `script`), answering prompts from
    /// `input`; returns whether it succeeded and what the terminal showed.
    pub fn talm_in_tty(&self, args: &str, input: &str) -> (bool, String) {
        self.talm_in_tty_with(&[], args, input)
    }

    /// [`Dir::talm_in_tty`] with variables added to talm's environment.
    pub fn talm_in_tty_with(
        &self,
        env: &[(&str, &std::path::Path)],
        args: &str,
        input: &str,
    ) -> (bool, String) {
        use std::io::Write;
        let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_talm"));
        let mut child = std::process::Command::new("script");
        child
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(self.path())
            .env_remove("TALM_PRESETS_DIR")
            .envs(env.iter().copied());
        let mut child = child
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("util-linux `script` runs talm under a terminal");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// The text of a fresh age key file, made by `talm init --encrypt` in a scratch project.
    pub fn new_key() -> String {
        talm::secrets::crypt::new_key_file()
    }

    /// An empty folder holding only the Talos stability secrets.yaml, so `init` keeps them
    /// instead of generating new ones.
    pub fn seeded() -> Dir {
        let d = Dir::new();
        d.write("secrets.yaml", STABILITY_SECRETS);
        d
    }

    /// Runs a command that must fail with `needle` on stderr and leave the folder unchanged;
    /// returns stderr.
    #[track_caller]
    pub fn refused(&self, args: &[&str], needle: &str) -> String {
        let before = self.snapshot();
        let o = self.talm(args).fails_with(needle);
        assert_eq!(
            self.snapshot(),
            before,
            "a refused command changed the folder"
        );
        o.stderr
    }

    /// A project made from `preset` over the Talos stability secrets (no key generation), so
    /// tests that are not about generation stay fast.
    pub fn project(preset: &str) -> Dir {
        let d = Dir::new();
        d.write("secrets.yaml", STABILITY_SECRETS);
        d.talm([
            "init",
            "--preset",
            preset,
            "--name",
            "mycluster",
            "--endpoints",
            "127.0.0.11",
        ])
        .ok();
        d
    }
}

pub struct Run {
    pub cmd: assert_cmd::Command,
    /// The test's folder, read as `$DIR` by [`Run::expect`].
    pub dir: Option<std::path::PathBuf>,
    /// The command line, for messages.
    pub args: Vec<String>,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Run {
        self.cmd.env(k, v);
        self
    }

    pub fn env_remove(mut self, k: &str) -> Run {
        self.cmd.env_remove(k);
        self
    }

    pub fn stdin(mut self, input: &str) -> Run {
        self.cmd.write_stdin(input.to_string());
        self
    }

    pub fn run(mut self) -> Out {
        let o = self.cmd.output().unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Runs and expects success.
    pub fn ok(self) -> Out {
        let o = self.run();
        assert_eq!(o.code, 0, "talm failed:\n{}", o.stderr);
        o
    }

    /// Runs and expects failure with `needle` on stderr.
    #[track_caller]
    pub fn fails_with(self, needle: &str) -> Out {
        let o = self.run();
        assert_ne!(o.code, 0, "talm unexpectedly succeeded:\n{}", o.stderr);
        assert!(
            o.stderr.contains(needle),
            "expected {needle:?} in stderr:\n{}",
            o.stderr
        );
        o
    }
}
