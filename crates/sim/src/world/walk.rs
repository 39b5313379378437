//! Walking a simulated node's files the way machined does: Talos's archiver walker (lexical
//! depth-first, root first, depth limits counted in path separators, type filters that still
//! descend), the List and DiskUsage replies built on it (DiskUsage's post-order folder sizes,
//! depth, threshold and `all` filters), and Copy's gzip-compressed tar of a tree.

use std::io::Write;

use super::fs::{self, mode, Body, Entry, Fs, PathError};
use talm_wire::proto::machine::{
    list_request, DiskUsageInfo, DiskUsageRequest, FileInfo, ListRequest, Xattr,
};

/// One walked entry: its path, its path relative to the root, and the entry.
pub struct Item<'a> {
    pub full: String,
    pub rel: String,
    pub entry: &'a Entry,
    pub error: Option<String>,
}

/// Root given to List or DiskUsage, normalised: a leading `/`, no trailing `/`, `/` if empty.
pub fn normalise(root: &str) -> String {
    let r = if root.starts_with('/') {
        root.to_string()
    } else {
        format!("/{root}")
    };
    let r = r.strip_suffix('/').unwrap_or(&r).to_string();
    if r.is_empty() {
        "/".into()
    } else {
        r
    }
}

fn count(p: &str) -> i64 {
    p.matches('/').count() as i64
}

fn type_matches(e: &Entry, types: &[list_request::Type]) -> bool {
    let m = e.mode();
    types.iter().any(|t| match t {
        list_request::Type::Regular => m & mode::TYPE == 0,
        list_request::Type::Directory => m & mode::DIR != 0,
        list_request::Type::Symlink => m & mode::SYMLINK != 0,
    })
}

/// The walker: `max_depth` < 0 is unlimited; with `skip_root` a directory root is not emitted.
pub fn walk<'a>(
    fs: &'a Fs,
    root: &str,
    max_depth: i64,
    types: &[list_request::Type],
    skip_root: bool,
) -> Result<Vec<Item<'a>>, PathError> {
    let (_, e) = fs.lstat(root)?;
    let root = if matches!(e.body, Body::Link(_)) {
        fs.resolve("lstat", root, true)?
    } else {
        fs::clean(root)
    };
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(path) = stack.pop() {
        let Some(entry) = fs.get(&path) else { continue };
        let rel = if path == root && !entry.is_dir() {
            path.rsplit('/').next().unwrap_or("").to_string()
        } else if path == root {
            ".".to_string()
        } else {
            let base = if root == "/" {
                "/".to_string()
            } else {
                format!("{root}/")
            };
            path.strip_prefix(&base).unwrap_or(&path).to_string()
        };
        if !types.is_empty() && !type_matches(entry, types) {
            if entry.is_dir() {
                push_children(fs, &path, &mut stack);
            }
            continue;
        }
        if path == root && skip_root && entry.is_dir() {
            push_children(fs, &path, &mut stack);
            continue;
        }
        out.push(Item {
            full: path.clone(),
            rel,
            entry,
            error: None,
        });
        let at_max = max_depth >= 0 && path != root && count(&path) - count(&root) >= max_depth;
        if entry.is_dir() && !at_max {
            push_children(fs, &path, &mut stack);
        }
    }
    Ok(out)
}

fn push_children(fs: &Fs, dir: &str, stack: &mut Vec<String>) {
    for name in fs.names(dir).into_iter().rev() {
        stack.push(fs::join(dir, &name));
    }
}

/// The List reply, in order; Err when the root cannot be walked (before anything is sent).
pub fn list(fs: &Fs, req: &ListRequest) -> Result<Vec<FileInfo>, PathError> {
    let root = normalise(&req.root);
    let depth = if !req.recurse {
        0
    } else if req.recursion_depth == 0 {
        -1
    } else {
        i64::from(req.recursion_depth)
    };
    let types: Vec<list_request::Type> = req
        .types
        .iter()
        .filter_map(|t| list_request::Type::try_from(*t).ok())
        .collect();
    let items = walk(fs, &root, depth, &types, false)?;
    Ok(items
        .into_iter()
        .map(|it| {
            let e = it.entry;
            let xattrs = if req.report_xattrs {
                vec![Xattr {
                    name: "security.selinux".into(),
                    data: format!("{}\0", super::rootfs::label(&it.full)).into_bytes(),
                }]
            } else {
                vec![]
            };
            FileInfo {
                metadata: None,
                name: it.full,
                size: e.size(),
                mode: e.mode(),
                modified: e.mtime,
                is_dir: e.is_dir(),
                error: String::new(),
                link: match &e.body {
                    Body::Link(t) => t.clone(),
                    _ => String::new(),
                },
                relative_name: it.rel,
                uid: e.uid,
                gid: e.gid,
                xattrs,
            }
        })
        .collect())
}

fn trim_right_slash(p: &str) -> String {
    p.trim_end_matches('/').to_string()
}

fn dir_of(p: &str) -> String {
    match p.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => p[..i].to_string(),
        None => ".".into(),
    }
}

/// The DiskUsage reply: machined's algorithm, including its quirks (only the first path that
/// can be walked is reported; folder sizes flushed by path prefix).
pub fn disk_usage(fs: &Fs, req: &DiskUsageRequest) -> Vec<DiskUsageInfo> {
    let mut out = Vec::new();
    let info = |name: &str, rel: &str, size: i64, error: &str| DiskUsageInfo {
        metadata: None,
        name: name.to_string(),
        size,
        error: error.to_string(),
        relative_name: rel.to_string(),
    };
    for raw in &req.paths {
        let path = normalise(raw);
        let items = match walk(fs, &path, -1, &[], false) {
            Ok(items) => items,
            Err(e) => {
                out.push(info(&path, &path, 0, &e.to_string()));
                continue;
            }
        };
        let mut folders: std::collections::HashMap<String, DiskUsageInfo> = Default::default();
        let root_depth = count(&path);
        let send = |out: &mut Vec<DiskUsageInfo>,
                    folders: &mut std::collections::HashMap<String, DiskUsageInfo>,
                    d: DiskUsageInfo,
                    depth: i64,
                    is_dir: bool| {
            let prefix = trim_right_slash(&dir_of(&d.name));
            if let Some(f) = folders.get_mut(&prefix) {
                f.size += d.size;
            }
            let rd = i64::from(req.recursion_depth);
            let skip = (depth >= rd && rd > 0)
                || (!is_dir && !req.all)
                || (req.threshold > 0 && d.size < req.threshold)
                || (req.threshold < 0 && d.size > -req.threshold);
            if !skip {
                out.push(d);
            }
        };
        let flush = |out: &mut Vec<DiskUsageInfo>,
                     folders: &mut std::collections::HashMap<String, DiskUsageInfo>,
                     mut prefix: String,
                     next: &str| {
            while !next.starts_with(&prefix) {
                let depth = count(&prefix) - root_depth;
                if let Some(f) = folders.remove(&prefix) {
                    send(out, folders, f, depth, true);
                }
                prefix = trim_right_slash(&dir_of(&prefix));
            }
        };
        let mut depth = 0i64;
        let mut prefix = path.clone();
        for it in items {
            let e = it.entry;
            let cur = count(&it.full) - root_depth;
            let size = if it.full == "/proc/kcore" {
                0
            } else {
                e.size().max(0)
            };
            if e.is_dir() {
                folders.insert(
                    trim_right_slash(&it.full),
                    info(&it.full, &it.rel, size, ""),
                );
            } else {
                send(
                    &mut out,
                    &mut folders,
                    info(&it.full, &it.rel, size, ""),
                    cur,
                    false,
                );
            }
            if cur < depth {
                flush(&mut out, &mut folders, prefix.clone(), &it.full);
                prefix = it.full.clone();
            }
            if e.is_dir() {
                prefix = it.full.clone();
            }
            depth = cur;
        }
        let p = trim_right_slash(&path);
        if let Some(root) = folders.get(&p).cloned() {
            flush(&mut out, &mut folders, prefix, &p);
            let root = folders.remove(&p).unwrap_or(root);
            send(&mut out, &mut folders, root, 0, true);
        }
        return out;
    }
    out
}

/// Copy: the gzip-compressed tar of the tree at `root` (root directory excluded), and the
/// problems met (Go multierror text) to send after the data; for a root that is not there, no
/// data and its error.
pub fn copy(fs: &Fs, root: &str) -> (Vec<u8>, Option<String>) {
    let mut problems: Vec<String> = Vec::new();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    match walk(fs, &fs::clean(root), -1, &[], true) {
        // A root that cannot be looked at fails before any archive is begun: no data, and the
        // error alone (Talos's archiver returns it before it makes its gzip writer).
        Err(e) => return (Vec::new(), Some(e.to_string())),
        Ok(items) => {
            for it in items {
                let e = it.entry;
                if let Err(why) = add(&mut tar, &it, e) {
                    problems.push(format!("skipping {:?}: {why}", it.full));
                }
            }
        }
    }
    let bytes = tar
        .into_inner()
        .and_then(|gz| gz.finish())
        .unwrap_or_default();
    let err = (!problems.is_empty()).then(|| multierror(&problems));
    (bytes, err)
}

/// hashicorp/go-multierror's text.
fn multierror(errs: &[String]) -> String {
    let points: Vec<String> = errs.iter().map(|e| format!("* {e}")).collect();
    if errs.len() == 1 {
        format!("1 error occurred:\n\t{}\n\n", points[0])
    } else {
        format!(
            "{} errors occurred:\n\t{}\n\n",
            errs.len(),
            points.join("\n\t")
        )
    }
}

fn add<W: Write>(tar: &mut tar::Builder<W>, it: &Item, e: &Entry) -> Result<(), String> {
    let mut h = tar::Header::new_gnu();
    let mut name = it.rel.clone();
    let mut data: Vec<u8> = Vec::new();
    let mut link = None;
    let kind = match &e.body {
        Body::Dir => {
            name.push('/');
            tar::EntryType::Directory
        }
        Body::Link(t) => {
            link = Some(t.as_str());
            tar::EntryType::Symlink
        }
        Body::CharDev(ma, mi) | Body::BlockDev(ma, mi) => {
            h.set_device_major(*ma).map_err(|x| x.to_string())?;
            h.set_device_minor(*mi).map_err(|x| x.to_string())?;
            if matches!(e.body, Body::CharDev(..)) {
                tar::EntryType::Char
            } else {
                tar::EntryType::Block
            }
        }
        Body::Socket => return Err("archive/tar: sockets not supported".into()),
        Body::Kernel(c) => {
            // Zero-sized kernel files are probed: short content is kept, long is dropped.
            if c.len() < 4096 {
                data = c.clone();
            }
            tar::EntryType::Regular
        }
        Body::File(_) | Body::Sized(_) => {
            data = e.content();
            tar::EntryType::Regular
        }
    };
    h.set_entry_type(kind);
    let go = e.perm & 0o777
        | if e.perm & mode::SETUID != 0 {
            0o4000
        } else {
            0
        }
        | if e.perm & mode::SETGID != 0 {
            0o2000
        } else {
            0
        }
        | if e.perm & mode::STICKY != 0 {
            0o1000
        } else {
            0
        };
    h.set_mode(go);
    h.set_uid(u64::from(e.uid));
    h.set_gid(u64::from(e.gid));
    h.set_mtime(e.mtime.max(0) as u64);
    h.set_size(data.len() as u64);
    // A name or link target past the header's 100 bytes goes in a long-name record before it.
    match link {
        Some(target) => tar.append_link(&mut h, &name, target),
        None => tar.append_data(&mut h, &name, data.as_slice()),
    }
    .map_err(|x| x.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Fs {
        let mut fs = Fs::new(10);
        fs.file("/etc/a", "aaaa", 0o644);
        fs.file("/etc/b/c", "cc", 0o644);
        fs.file("/etc/b-x", "x", 0o644);
        fs.link("/etc/l", "a");
        fs.link("/e", "/etc");
        fs.kernel("/proc/x", "12345", 0o444);
        fs.put("/run/s.sock", Body::Socket, 0o600);
        fs
    }

    fn names(v: &[FileInfo]) -> Vec<&str> {
        v.iter().map(|f| f.relative_name.as_str()).collect()
    }

    #[test]
    fn list_walks_like_machined() {
        let fs = tree();
        let req = |root: &str, recurse, depth, types: Vec<i32>| ListRequest {
            root: root.into(),
            recurse,
            recursion_depth: depth,
            types,
            report_xattrs: false,
        };
        assert_eq!(
            names(&list(&fs, &req("/etc", false, 1, vec![])).unwrap()),
            [".", "a", "b", "b-x", "l"]
        );
        assert_eq!(
            names(&list(&fs, &req("etc/", true, -1, vec![])).unwrap()),
            [".", "a", "b", "b/c", "b-x", "l"]
        );
        assert_eq!(
            names(&list(&fs, &req("/e", false, 1, vec![])).unwrap())[0],
            "."
        );
        assert_eq!(
            list(&fs, &req("/e", false, 1, vec![])).unwrap()[0].name,
            "/etc"
        );
        // Children of `/` count as level 0: depth 0 still lists them, not their contents.
        assert_eq!(
            names(&list(&fs, &req("/", false, 0, vec![])).unwrap()),
            [".", "e", "etc", "proc", "run"]
        );
        // A type filter still descends into directories it leaves out, whatever the depth.
        let files = list(
            &fs,
            &req("/etc", false, 1, vec![list_request::Type::Regular as i32]),
        )
        .unwrap();
        assert_eq!(names(&files), ["a", "b/c", "b-x"]);
        assert_eq!(
            list(&fs, &req("/etc/a", false, 1, vec![])).unwrap()[0].relative_name,
            "a"
        );
        assert_eq!(
            list(&fs, &req("/nope", false, 1, vec![]))
                .unwrap_err()
                .to_string(),
            "lstat /nope: no such file or directory"
        );
        let l = list(&fs, &req("/etc/l", false, 1, vec![])).unwrap();
        assert_eq!(l[0].name, "/etc/a");
    }

    #[test]
    fn disk_usage_sums_post_order() {
        let fs = tree();
        let du = |paths: &[&str], depth, all| {
            disk_usage(
                &fs,
                &DiskUsageRequest {
                    recursion_depth: depth,
                    all,
                    threshold: 0,
                    paths: paths.iter().map(|s| s.to_string()).collect(),
                },
            )
        };
        let r = du(&["/etc"], 0, true);
        let got: Vec<(&str, i64)> = r
            .iter()
            .map(|d| (d.relative_name.as_str(), d.size))
            .collect();
        // machined flushes a folder only when the walk leaves its path prefix: `b-x` starts
        // with `b`, so `b` is never reported nor counted in its parent (as on a real node).
        assert_eq!(got, [("a", 4), ("b/c", 2), ("b-x", 1), ("l", 1), (".", 6)]);
        let mut plain = Fs::new(0);
        plain.file("/d/a", "aaaa", 0o644);
        plain.file("/d/b/c", "cc", 0o644);
        plain.file("/d/d", "d", 0o644);
        let r = disk_usage(
            &plain,
            &DiskUsageRequest {
                recursion_depth: 0,
                all: true,
                threshold: 0,
                paths: vec!["/d".into()],
            },
        );
        let got: Vec<(&str, i64)> = r
            .iter()
            .map(|d| (d.relative_name.as_str(), d.size))
            .collect();
        assert_eq!(got, [("a", 4), ("b/c", 2), ("d", 1), ("b", 2), (".", 7)]);
        let r = du(&["/etc"], 1, false);
        let got: Vec<(&str, i64)> = r
            .iter()
            .map(|d| (d.relative_name.as_str(), d.size))
            .collect();
        assert_eq!(got, [(".", 6)]);
        let r = du(&["/nope", "/etc", "/proc"], 2, false);
        assert_eq!(r[0].error, "lstat /nope: no such file or directory");
        assert!(
            r.iter().all(|d| !d.name.starts_with("/proc")),
            "only the first walkable path"
        );
    }

    #[test]
    fn copy_is_a_tar_gz_with_problems_after() {
        let fs = tree();
        let (bytes, err) = copy(&fs, "/");
        let mut names = vec![];
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            names.push(e.path().unwrap().display().to_string());
        }
        assert!(names.contains(&"etc/".to_string()) && names.contains(&"proc/x".to_string()));
        assert!(!names.iter().any(|n| n == "./" || n == "/"));
        assert_eq!(err.unwrap(), "1 error occurred:\n\t* skipping \"/run/s.sock\": archive/tar: sockets not supported\n\n");
        assert_eq!(
            copy(&fs, "/missing"),
            (
                Vec::new(),
                Some("lstat /missing: no such file or directory".to_string())
            )
        );
    }

    #[test]
    fn copy_carries_long_names_and_link_targets_whole() {
        // /var/log/containers links point at /var/log/pods/<namespace>_<pod>_<uid>/...: longer
        // than a tar header's 100 bytes on every real node.
        let dir = format!("/var/log/pods/kube-system_{}", "p".repeat(110));
        let file = format!("{dir}/c/0.log");
        let link = format!("/var/log/containers/{}.log", "c".repeat(110));
        let mut fs = Fs::new(10);
        fs.file(&file, "line\n", 0o640);
        fs.link(&link, &file);
        let (bytes, err) = copy(&fs, "/var/log");
        assert_eq!(err, None);
        let mut got = vec![];
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            let target = e
                .link_name()
                .unwrap()
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            got.push((e.path().unwrap().display().to_string(), target));
        }
        let rel = |p: &str| p.trim_start_matches("/var/log/").to_string();
        assert!(got.contains(&(rel(&file), String::new())), "{got:?}");
        assert!(got.contains(&(rel(&link), file.clone())), "{got:?}");
    }
}
