//! The option maps of the inspection methods, each declared once with its keys and types.

use crate::runtime::opts::options;

options! {
    /// `n.containers(#{...})`.
    pub struct KubeOpts for "n.containers" {
        /// The CRI's pods and containers (`k8s.io`) instead of Talos's own.
        kubernetes: bool,
    }
}

options! {
    /// `n.stats(#{...})`.
    pub struct StatsOpts for "n.stats" {
        kubernetes: bool,
    }
}

options! {
    /// `n.netstat(#{...})`.
    pub struct NetstatOpts for "n.netstat" {
        /// connected (default), listening or all.
        filter: String,
        /// Report the process owning each socket.
        programs: bool,
        /// tcp, tcp6, udp, udp6, udplite, udplite6, raw, raw6 (default the first four).
        protocols: Vec<String>,
        /// Sockets of the host network (default true).
        host: Option<bool>,
        /// Pod network namespaces to include.
        netns: Vec<String>,
        /// Every pod network namespace.
        all_netns: bool,
    }
}

options! {
    /// `n.list(path, #{...})`.
    pub struct ListOpts for "n.list" {
        recurse: bool,
        /// Recursion depth (with `recurse`, 0 is unlimited).
        depth: i64,
        /// talosctl's type letters: f, d, l.
        types: Vec<String>,
        /// Read extended attributes (the SELinux label).
        xattrs: bool,
    }
}

options! {
    /// `n.usage(paths, #{...})`.
    pub struct UsageOpts for "n.usage" {
        /// Levels reported (0 = all).
        depth: i64,
        /// Files too, not only folders.
        all: bool,
        /// Bytes: smaller entries are left out (larger ones when negative).
        threshold: i64,
    }
}

options! {
    /// `n.images(#{...})`.
    pub struct ImagesOpts for "n.images" {
        /// cri (default), system or inmem.
        namespace: String,
    }
}

options! {
    /// `n.cgroups(#{...})`.
    pub struct CgroupsOpts for "n.cgroups" {
        /// cpu, cpuset, io, memory, process, psi or swap.
        preset: String,
        /// Keep pod and container cgroups under their IDs.
        skip_cri_resolve: bool,
    }
}
