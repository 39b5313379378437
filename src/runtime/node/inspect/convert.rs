//! Talos reply messages as script maps: keys are the messages' field names, every map carries
//! the node it came from, numbers are integers (floats for seconds).

use rhai::{Array, Dynamic, Map};

use crate::proto::{machine, time as timeapi};
use talm_base::humanize;

fn map(node: &str, pairs: Vec<(&str, Dynamic)>) -> Map {
    let mut m = Map::new();
    m.insert("node".into(), node.to_string().into());
    for (k, v) in pairs {
        m.insert(k.into(), v);
    }
    m
}

fn s(v: impl Into<String>) -> Dynamic {
    Dynamic::from(v.into())
}

fn i(v: impl TryInto<i64>) -> Dynamic {
    Dynamic::from(v.try_into().unwrap_or(i64::MAX))
}

fn secs(ts: Option<prost_types::Timestamp>) -> Dynamic {
    match ts {
        Some(t) => Dynamic::from(t.seconds as f64 + f64::from(t.nanos) / 1e9),
        None => Dynamic::UNIT,
    }
}

pub fn container(node: &str, c: machine::ContainerInfo) -> Map {
    map(
        node,
        vec![
            ("namespace", s(c.namespace)),
            ("id", s(c.id)),
            ("image", s(c.image)),
            ("pid", i(c.pid)),
            ("status", s(c.status)),
            ("pod_id", s(c.pod_id)),
            ("name", s(c.name)),
            ("network_namespace", s(c.network_namespace)),
            ("internal_id", s(c.internal_id)),
            ("uid", s(c.uid)),
        ],
    )
}

pub fn stat(node: &str, st: machine::Stat) -> Map {
    map(
        node,
        vec![
            ("namespace", s(st.namespace)),
            ("id", s(st.id)),
            ("pod_id", s(st.pod_id)),
            ("name", s(st.name)),
            ("memory_usage", i(st.memory_usage)),
            ("cpu_usage", i(st.cpu_usage)),
        ],
    )
}

pub fn process(node: &str, p: machine::ProcessInfo) -> Map {
    map(
        node,
        vec![
            ("pid", i(p.pid)),
            ("ppid", i(p.ppid)),
            ("state", s(p.state)),
            ("threads", i(p.threads)),
            ("cpu_time", Dynamic::from(p.cpu_time)),
            ("virtual_memory", i(p.virtual_memory)),
            ("resident_memory", i(p.resident_memory)),
            ("command", s(p.command)),
            ("executable", s(p.executable)),
            ("args", s(p.args)),
            ("label", s(p.label)),
        ],
    )
}

pub fn meminfo(node: &str, m: &machine::MemInfo) -> Map {
    map(
        node,
        vec![
            ("memtotal", i(m.memtotal)),
            ("memfree", i(m.memfree)),
            ("memavailable", i(m.memavailable)),
            ("buffers", i(m.buffers)),
            ("cached", i(m.cached)),
            ("swapcached", i(m.swapcached)),
            ("active", i(m.active)),
            ("inactive", i(m.inactive)),
            ("activeanon", i(m.activeanon)),
            ("inactiveanon", i(m.inactiveanon)),
            ("activefile", i(m.activefile)),
            ("inactivefile", i(m.inactivefile)),
            ("unevictable", i(m.unevictable)),
            ("mlocked", i(m.mlocked)),
            ("swaptotal", i(m.swaptotal)),
            ("swapfree", i(m.swapfree)),
            ("dirty", i(m.dirty)),
            ("writeback", i(m.writeback)),
            ("anonpages", i(m.anonpages)),
            ("mapped", i(m.mapped)),
            ("shmem", i(m.shmem)),
            ("slab", i(m.slab)),
            ("sreclaimable", i(m.sreclaimable)),
            ("sunreclaim", i(m.sunreclaim)),
            ("kernelstack", i(m.kernelstack)),
            ("pagetables", i(m.pagetables)),
            ("nfsunstable", i(m.nfsunstable)),
            ("bounce", i(m.bounce)),
            ("writebacktmp", i(m.writebacktmp)),
            ("commitlimit", i(m.commitlimit)),
            ("committedas", i(m.committedas)),
            ("vmalloctotal", i(m.vmalloctotal)),
            ("vmallocused", i(m.vmallocused)),
            ("vmallocchunk", i(m.vmallocchunk)),
            ("hardwarecorrupted", i(m.hardwarecorrupted)),
            ("anonhugepages", i(m.anonhugepages)),
            ("shmemhugepages", i(m.shmemhugepages)),
            ("shmempmdmapped", i(m.shmempmdmapped)),
            ("cmatotal", i(m.cmatotal)),
            ("cmafree", i(m.cmafree)),
            ("hugepagestotal", i(m.hugepagestotal)),
            ("hugepagesfree", i(m.hugepagesfree)),
            ("hugepagesrsvd", i(m.hugepagesrsvd)),
            ("hugepagessurp", i(m.hugepagessurp)),
            ("hugepagesize", i(m.hugepagesize)),
            ("directmap4k", i(m.directmap4k)),
            ("directmap2m", i(m.directmap2m)),
            ("directmap1g", i(m.directmap1g)),
        ],
    )
}

pub fn mount(node: &str, m: machine::MountStat) -> Map {
    map(
        node,
        vec![
            ("filesystem", s(m.filesystem)),
            ("size", i(m.size)),
            ("available", i(m.available)),
            ("mounted_on", s(m.mounted_on)),
        ],
    )
}

/// A block device's I/O counters (/proc/diskstats), in Talos's DiskStat field names.
pub fn disk_stat(node: &str, d: machine::DiskStat) -> Map {
    map(
        node,
        vec![
            ("name", s(d.name)),
            ("read_completed", i(d.read_completed)),
            ("read_sectors", i(d.read_sectors)),
            ("read_time_ms", i(d.read_time_ms)),
            ("write_completed", i(d.write_completed)),
            ("write_sectors", i(d.write_sectors)),
            ("write_time_ms", i(d.write_time_ms)),
            ("io_in_progress", i(d.io_in_progress)),
            ("io_time_ms", i(d.io_time_ms)),
            ("io_time_weighted_ms", i(d.io_time_weighted_ms)),
        ],
    )
}

pub fn connection(node: &str, r: machine::ConnectRecord) -> Map {
    use machine::connect_record::{State, TimerActive};
    let state = State::try_from(r.state)
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_else(|_| r.state.to_string());
    let tr = TimerActive::try_from(r.tr)
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_else(|_| r.tr.to_string());
    let p = r.process.unwrap_or_default();
    let mut process = Map::new();
    process.insert("pid".into(), i(p.pid));
    process.insert("name".into(), s(p.name));
    map(
        node,
        vec![
            ("l4proto", s(r.l4proto)),
            ("localip", s(r.localip)),
            ("localport", i(r.localport)),
            ("remoteip", s(r.remoteip)),
            ("remoteport", i(r.remoteport)),
            ("state", s(state)),
            ("txqueue", i(r.txqueue)),
            ("rxqueue", i(r.rxqueue)),
            ("tr", s(tr)),
            ("timerwhen", i(r.timerwhen)),
            ("retrnsmt", i(r.retrnsmt)),
            ("uid", i(r.uid)),
            ("timeout", i(r.timeout)),
            ("inode", i(r.inode)),
            ("ref", i(r.r#ref)),
            ("pointer", i(r.pointer)),
            ("process", process.into()),
            ("netns", s(r.netns)),
        ],
    )
}

pub fn file_info(node: &str, f: machine::FileInfo) -> Map {
    let label = f
        .xattrs
        .iter()
        .find(|x| x.name == "security.selinux")
        .map(|x| {
            String::from_utf8_lossy(&x.data)
                .trim_matches(['\0', '\n'])
                .to_string()
        })
        .unwrap_or_default();
    map(
        node,
        vec![
            ("name", s(f.name)),
            ("relative_name", s(f.relative_name)),
            ("size", i(f.size)),
            ("mode", i(f.mode)),
            ("modified", i(f.modified)),
            ("is_dir", f.is_dir.into()),
            ("error", s(f.error)),
            ("link", s(f.link)),
            ("uid", i(f.uid)),
            ("gid", i(f.gid)),
            ("label", s(label)),
        ],
    )
}

pub fn usage_info(node: &str, d: machine::DiskUsageInfo) -> Map {
    map(
        node,
        vec![
            ("name", s(d.name)),
            ("relative_name", s(d.relative_name)),
            ("size", i(d.size)),
            ("error", s(d.error)),
        ],
    )
}

pub fn time_info(node: &str, t: timeapi::Time) -> Map {
    let text = |ts: Option<prost_types::Timestamp>| match ts {
        Some(t) if (0..1_000_000_000).contains(&t.nanos) => {
            s(humanize::go_time(t.seconds, t.nanos as u32))
        }
        _ => s(""),
    };
    map(
        node,
        vec![
            ("server", s(t.server)),
            ("localtime", text(t.localtime)),
            ("remotetime", text(t.remotetime)),
        ],
    )
}

pub fn service_info(node: &str, sv: machine::ServiceInfo) -> Map {
    let h = sv.health.unwrap_or_default();
    let health = if h.unknown {
        "?"
    } else if h.healthy {
        "OK"
    } else {
        "Fail"
    };
    let events: Array = sv
        .events
        .unwrap_or_default()
        .events
        .into_iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("msg".into(), s(e.msg));
            m.insert("state".into(), s(e.state));
            m.insert("ts".into(), secs(e.ts));
            Dynamic::from(m)
        })
        .collect();
    map(
        node,
        vec![
            ("id", s(sv.id)),
            ("state", s(sv.state)),
            ("health", s(health)),
            ("healthy", h.healthy.into()),
            ("unknown", h.unknown.into()),
            ("last_message", s(h.last_message)),
            ("last_change", secs(h.last_change)),
            ("events", events.into()),
        ],
    )
}

pub fn image(node: &str, im: machine::ImageServiceListResponse) -> Map {
    let mut labels: Vec<(String, String)> = im.labels.into_iter().collect();
    labels.sort();
    let labels: Map = labels.into_iter().map(|(k, v)| (k.into(), s(v))).collect();
    map(
        node,
        vec![
            ("name", s(im.name)),
            ("digest", s(im.digest)),
            ("size", i(im.size)),
            (
                "created",
                im.created_at.map_or(Dynamic::UNIT, |t| i(t.seconds)),
            ),
            ("labels", labels.into()),
        ],
    )
}
