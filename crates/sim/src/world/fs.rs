//! A simulated node's file tree: entries by absolute path with Go `os.FileMode` types and
//! permissions, owners, modification times and SELinux labels, symbolic links resolved the
//! way the kernel does (relative targets, loops), and the errors the calls report as Go's
//! `os` package words them (`lstat /x: no such file or directory`).

use std::collections::BTreeMap;

/// Go `os.FileMode` type and flag bits.
pub mod mode {
    pub const DIR: u32 = 1 << 31;
    pub const SYMLINK: u32 = 1 << 27;
    pub const DEVICE: u32 = 1 << 26;
    pub const NAMED_PIPE: u32 = 1 << 25;
    pub const SOCKET: u32 = 1 << 24;
    pub const SETUID: u32 = 1 << 23;
    pub const SETGID: u32 = 1 << 22;
    pub const CHAR_DEVICE: u32 = 1 << 21;
    pub const STICKY: u32 = 1 << 20;
    /// The bits that make a file not regular.
    pub const TYPE: u32 = DIR | SYMLINK | NAMED_PIPE | SOCKET | DEVICE | CHAR_DEVICE | (1 << 19);
}

/// What an entry is and holds.
#[derive(Clone, Debug)]
pub enum Body {
    Dir,
    /// A regular file with its content.
    File(Vec<u8>),
    /// A regular file of this size whose content is not kept (binaries): reads give an ELF
    /// header and zeros.
    Sized(u64),
    /// A kernel file (procfs, sysfs, cgroupfs): stat size 0, content when read.
    Kernel(Vec<u8>),
    Link(String),
    CharDev(u32, u32),
    BlockDev(u32, u32),
    Socket,
}

/// One file, directory, link or device.
#[derive(Clone, Debug)]
pub struct Entry {
    pub body: Body,
    /// Permission bits plus Go's setuid, setgid and sticky bits.
    pub perm: u32,
    pub uid: u32,
    pub gid: u32,
    /// Unix seconds.
    pub mtime: i64,
}

impl Entry {
    /// Go's `os.FileMode` of the entry.
    pub fn mode(&self) -> u32 {
        let kind = match self.body {
            Body::Dir => mode::DIR,
            Body::Link(_) => mode::SYMLINK,
            Body::CharDev(..) => mode::DEVICE | mode::CHAR_DEVICE,
            Body::BlockDev(..) => mode::DEVICE,
            Body::Socket => mode::SOCKET,
            Body::File(_) | Body::Sized(_) | Body::Kernel(_) => 0,
        };
        kind | self.perm
    }

    pub fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir)
    }

    pub fn is_regular(&self) -> bool {
        self.mode() & mode::TYPE == 0
    }

    /// `st_size`.
    pub fn size(&self) -> i64 {
        match &self.body {
            Body::File(b) => b.len() as i64,
            Body::Sized(n) => *n as i64,
            Body::Link(t) => t.len() as i64,
            Body::Dir | Body::Kernel(_) | Body::CharDev(..) | Body::BlockDev(..) | Body::Socket => {
                0
            }
        }
    }

    /// What reading the file gives.
    pub fn content(&self) -> Vec<u8> {
        match &self.body {
            Body::File(b) | Body::Kernel(b) => b.clone(),
            Body::Sized(n) => {
                let mut v = vec![0u8; *n as usize];
                let elf = b"\x7fELF\x02\x01\x01";
                let k = elf.len().min(v.len());
                v[..k].copy_from_slice(&elf[..k]);
                v
            }
            _ => Vec::new(),
        }
    }
}

/// A path problem, worded as Go's `os` errors are (`<op> <path>: <reason>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    pub op: &'static str,
    pub path: String,
    pub reason: &'static str,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.op, self.path, self.reason)
    }
}

pub const NOT_FOUND: &str = "no such file or directory";
const LOOP: &str = "too many levels of symbolic links";
const NOT_DIR: &str = "not a directory";

/// The tree.
#[derive(Clone, Debug, Default)]
pub struct Fs {
    entries: BTreeMap<String, Entry>,
    /// Modification time given to entries added without one.
    pub mtime: i64,
}

/// `path` made absolute and clean (`.`/`..`/doubled slashes removed), as Go's `filepath.Clean`
/// of an absolute path.
pub fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Joins a directory and a name.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

impl Fs {
    /// An empty tree with its root directory.
    pub fn new(mtime: i64) -> Fs {
        let mut fs = Fs {
            entries: BTreeMap::new(),
            mtime,
        };
        fs.entries.insert(
            "/".into(),
            Entry {
                body: Body::Dir,
                perm: 0o755,
                uid: 0,
                gid: 0,
                mtime,
            },
        );
        fs
    }

    /// Adds (or replaces) an entry, creating missing parent directories (0755).
    pub fn put(&mut self, path: &str, body: Body, perm: u32) -> &mut Entry {
        let path = clean(path);
        let mut missing = Vec::new();
        let mut p = parent(&path).to_string();
        while !self.entries.contains_key(&p) {
            missing.push(p.clone());
            p = parent(&p).to_string();
        }
        for d in missing.into_iter().rev() {
            self.entries.insert(
                d,
                Entry {
                    body: Body::Dir,
                    perm: 0o755,
                    uid: 0,
                    gid: 0,
                    mtime: self.mtime,
                },
            );
        }
        let mtime = self.mtime;
        self.entries.insert(
            path.clone(),
            Entry {
                body,
                perm,
                uid: 0,
                gid: 0,
                mtime,
            },
        );
        // The entry was inserted under this key two lines above.
        self.entries.get_mut(&path).expect("just inserted")
    }

    pub fn dir(&mut self, path: &str, perm: u32) -> &mut Entry {
        self.put(path, Body::Dir, perm)
    }

    pub fn file(&mut self, path: &str, content: impl Into<Vec<u8>>, perm: u32) -> &mut Entry {
        self.put(path, Body::File(content.into()), perm)
    }

    pub fn kernel(&mut self, path: &str, content: impl Into<Vec<u8>>, perm: u32) -> &mut Entry {
        self.put(path, Body::Kernel(content.into()), perm)
    }

    pub fn link(&mut self, path: &str, target: &str) -> &mut Entry {
        self.put(path, Body::Link(target.to_string()), 0o777)
    }

    /// The entry at `path` itself (a link is not followed).
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.get(path)
    }

    /// Every entry, by path.
    pub fn entries(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.entries.iter()
    }

    /// The names in directory `dir`, sorted.
    pub fn names(&self, dir: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        self.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| {
                let rest = &k[prefix.len()..];
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
            })
            .collect()
    }

    /// The path with every link resolved, or why it cannot be (`op` names the operation in
    /// the error, e.g. `stat`). With `last = false` the final component is not followed.
    pub fn resolve(&self, op: &'static str, path: &str, last: bool) -> Result<String, PathError> {
        let err = |reason| PathError {
            op,
            path: path.to_string(),
            reason,
        };
        let mut todo: Vec<String> = clean(path)
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .rev()
            .collect();
        let mut cur = "/".to_string();
        let mut hops = 0;
        while let Some(name) = todo.pop() {
            if name == ".." {
                cur = parent(&cur).to_string();
                continue;
            }
            let next = join(&cur, &name);
            let entry = self.entries.get(&next).ok_or_else(|| err(NOT_FOUND))?;
            match &entry.body {
                Body::Link(target) if last || !todo.is_empty() => {
                    hops += 1;
                    if hops > 40 {
                        return Err(err(LOOP));
                    }
                    if target.starts_with('/') {
                        cur = "/".to_string();
                    }
                    todo.extend(
                        target
                            .split('/')
                            .filter(|s| !s.is_empty() && *s != ".")
                            .map(str::to_string)
                            .rev(),
                    );
                }
                Body::Dir => cur = next,
                _ if !todo.is_empty() => return Err(err(NOT_DIR)),
                _ => cur = next,
            }
        }
        Ok(cur)
    }

    /// `os.Lstat`: the entry at `path`, links not followed in the last component.
    pub fn lstat(&self, path: &str) -> Result<(String, &Entry), PathError> {
        let p = self.resolve("lstat", path, false)?;
        Ok((
            p.clone(),
            self.entries.get(&p).ok_or_else(|| PathError {
                op: "lstat",
                path: path.to_string(),
                reason: NOT_FOUND,
            })?,
        ))
    }

    /// `os.Stat`: the entry `path` leads to.
    pub fn stat(&self, path: &str) -> Result<(String, &Entry), PathError> {
        let p = self.resolve("stat", path, true)?;
        Ok((
            p.clone(),
            self.entries.get(&p).ok_or_else(|| PathError {
                op: "stat",
                path: path.to_string(),
                reason: NOT_FOUND,
            })?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_links_and_modes() {
        let mut fs = Fs::new(100);
        fs.file("/etc/hostname", "node\n", 0o644);
        fs.link("/etc/alias", "hostname");
        fs.link("/abs", "/etc");
        fs.link("/loop", "/loop");
        fs.put("/dev/null", Body::CharDev(1, 3), 0o666);
        assert_eq!(fs.names("/"), ["abs", "dev", "etc", "loop"]);
        assert_eq!(fs.names("/etc"), ["alias", "hostname"]);
        assert_eq!(fs.stat("/etc/alias").unwrap().0, "/etc/hostname");
        assert_eq!(fs.stat("/abs/./hostname").unwrap().0, "/etc/hostname");
        assert_eq!(
            fs.lstat("/etc/alias").unwrap().1.mode(),
            mode::SYMLINK | 0o777
        );
        assert_eq!(fs.get("/etc").unwrap().mode(), mode::DIR | 0o755);
        assert_eq!(
            fs.get("/dev/null").unwrap().mode(),
            mode::DEVICE | mode::CHAR_DEVICE | 0o666
        );
        assert_eq!(
            fs.stat("/nope").unwrap_err().to_string(),
            "stat /nope: no such file or directory"
        );
        assert_eq!(
            fs.stat("/loop").unwrap_err().reason,
            "too many levels of symbolic links"
        );
        assert_eq!(
            fs.stat("/etc/hostname/x").unwrap_err().reason,
            "not a directory"
        );
        assert_eq!(clean("a/../b//c/."), "/b/c");
    }
}
