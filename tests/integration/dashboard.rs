//! `talm dashboard`: its data source against simulated nodes (stats that move, routing through
//! an endpoint), the real binary in a pseudo-terminal (switch node and screen, quit), and the
//! README's picture rendered from real simulated data.

use std::time::Duration;

use talm::config::generate::MachineType;
use talm::dashboard::model::{Health, State, Update};
use talm::dashboard::source;
use talm::proto::machine;
use talm::talos::client::Client;
use talm::talos::creds::Auth;

use crate::common::net;
use crate::common::sim::{admin, config, opts, Nodes};
use crate::common::tty::{masked, named, Tty, COLS, ROWS};

fn sample(c: &Client) -> talm::dashboard::model::Sample {
    talm::talos::block_on(source::sample(c, true))
}

#[test]
fn source_reads_a_maintenance_node() {
    let addrs = net::addrs::<1>();
    let h = Nodes::start(&addrs, named("dash", &addrs));
    let c = h.connect(&addrs[0], Auth::Insecure).unwrap();
    let first = sample(&c);
    assert_eq!(first.error, None);
    assert_eq!(first.hostname.as_deref(), Some("dash-1"));
    assert_eq!(first.version.as_deref(), Some("v1.13.7"));
    let cpus = first.cpus.unwrap();
    assert_eq!((cpus.count, cpus.mhz), (4, 2445.406));
    let mem = first.memory.unwrap();
    // The same memory the node reports to `talm memory` (one picture of the node).
    let meminfo = talm::talos::block_on(c.memory()).unwrap();
    assert_eq!(mem.total_kib, meminfo.memtotal);
    assert!(
        mem.used_kib > 100_000 && mem.used_kib < mem.total_kib,
        "{mem:?}"
    );
    let ids: Vec<_> = first
        .services
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(ids, ["apid", "machined", "udevd"]);
    let now = time::OffsetDateTime::now_utc().unix_timestamp() as u64;
    let boot = first.boot_time.unwrap();
    assert!(boot <= now && now - boot < 60, "boot {boot}, now {now}");

    // The counters move: a second poll gives a CPU usage, and the machine is mostly idle.
    std::thread::sleep(Duration::from_millis(300));
    let second = sample(&c);
    assert_eq!(second.boot_time, Some(boot));
    let (a, b) = (first.cpu.unwrap(), second.cpu.unwrap());
    assert!(b.busy > a.busy && b.idle > a.idle, "{a:?} → {b:?}");
    // So do the network and disk counters (lo and eth0; the NVMe disk).
    let total = |s: &talm::dashboard::model::Sample| {
        let net = s.net.as_ref().unwrap();
        let names: Vec<_> = net.devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["lo", "eth0"]);
        let disk = s.disk.as_ref().unwrap();
        assert_eq!(disk.devices[0].name, "nvme0n1");
        (net.total.clone().unwrap(), disk.total.clone().unwrap())
    };
    let ((n1, d1), (n2, d2)) = (total(&first), total(&second));
    assert!(n2.rx_bytes > n1.rx_bytes && n2.tx_bytes > n1.tx_bytes);
    assert!(d2.write_sectors > d1.write_sectors, "{d1:?} → {d2:?}");
    let mut state = State::new(addrs);
    for s in [first, second] {
        state.apply(Update::Sample {
            node: 0,
            sample: Box::new(s),
        });
    }
    let usage = state.nodes[0].cpu_usage.unwrap();
    assert!(usage > 0.0 && usage < 0.2, "{usage}");
    let series = &state.nodes[0].metrics.series;
    assert_eq!(series.net_rx[0], 0.0);
    assert_eq!(series.net_rx[1], (n2.rx_bytes - n1.rx_bytes) as f64);
    assert_eq!(
        series.disk_write[1],
        (d2.write_sectors - d1.write_sectors) as f64
    );
}

#[test]
fn stats_route_through_an_endpoint_to_a_control_plane() {
    let addrs = net::addrs::<2>();
    let [a, b] = &addrs;
    let h = Nodes::start(&addrs, named("cp", &addrs));
    h.install_control_plane(a);
    h.install_control_plane(b);
    let via = talm::talos::block_on(Client::connect(a, Some(b.as_str()), &opts(admin()))).unwrap();
    talm::talos::block_on(via.bootstrap(machine::BootstrapRequest::default())).unwrap();
    // Every stats reply names the node it came from (apid's one-to-many rewrite).
    let stat = talm::talos::block_on(via.system_stat()).unwrap();
    assert_eq!(&stat.metadata.unwrap().hostname, b);
    assert_eq!(stat.cpu.len(), 4);
    let load = talm::talos::block_on(via.load_avg()).unwrap();
    assert_eq!(&load.metadata.unwrap().hostname, b);
    let mem = talm::talos::block_on(via.memory()).unwrap();
    assert!(mem.memavailable > mem.memfree && mem.memfree < mem.memtotal);
    let s = sample(&via);
    assert_eq!(s.hostname.as_deref(), Some("cp-2"));
    let services = s.services.unwrap();
    let etcd = services.iter().find(|s| s.id == "etcd").unwrap();
    assert_eq!((etcd.state.as_str(), etcd.health), ("Running", Health::Ok));
    assert!(services.iter().any(|s| s.id == "kubelet"));
    // The Summary's panels read the node's resources through COSI.
    let r = s.resources.unwrap();
    let k8s = talm::dashboard::panels::kubernetes(&r, None);
    assert_eq!(
        (k8s[0].0, k8s[0].1.text().as_str()),
        ("TYPE", "controlplane")
    );
    assert_eq!(k8s.len(), 6, "{k8s:?}");
    let net = talm::dashboard::panels::network(&r);
    assert_eq!(net[0].1.text(), "cp-2");

    // A node that is down: every call fails and the sample says why, naming the node.
    let nobody = net::addr();
    let gone =
        talm::talos::block_on(Client::connect(a, Some(nobody.as_str()), &opts(admin()))).unwrap();
    let s = sample(&gone);
    let err = s.error.unwrap();
    assert!(err.contains(&nobody), "{err}");
    assert!(s.hostname.is_none() && s.services.is_none());
}

#[test]
fn dashboard_in_a_terminal_switches_node_and_screen_and_quits() {
    let addrs = net::addrs::<2>();
    let [a, b] = &addrs;
    let _h = Nodes::start(&addrs, named("dash", &addrs));
    let mut tty = Tty::spawn(&format!("dashboard -n {a},{b} -i"));
    let screen = tty.wait_for(&["dash-1 Talos (v1.13.7)", "eth0: link up"]);
    // The simulated network's gateway: the first address of the node's /24.
    let gw = format!("{}.1", a.rsplit_once('.').unwrap().0);
    let mut want = vec![
        "* dash-1 Talos (v1.13.7): uptime *, 4x2.44GHz, 3.8 GiB RAM, PROCS *, CPU *, RAM *".to_string(),
        String::new(),
        // A node in maintenance: its machine status and identity, no cluster or Kubernetes yet;
        // the long UUID wraps, pushing SECUREBOOT below the panel as in talosctl's text views.
        " UUID       <uuid: 8-4-4-4-1 hex>    TYPE       n/a           HOST         dash-1".into(),
        format!(" <uuid rest>                          KUBERNETES n/a           IP           {a}/24"),
        format!(" CLUSTER    n/a n/a                   KUBELET    n/a           GW           {gw}"),
        " SIDEROLINK n/a                                                CONNECTIVITY n/a".into(),
        " STAGE      Maintenance                                        DNS          1.1.1.1, 8.8.8.8".into(),
        " READY      √ True                                             NTP          n/a".into(),
        format!("── Logs {}", "─".repeat(COLS - 8)),
        " kern:  notice: [TIME]: Linux version 6.12.0-talos (simulated)".into(),
        " kern:    info: [TIME]: talos: booting v1.13.7 (boot 1)".into(),
        " kern:    info: [TIME]: virtio_net virtio0 eth0: link up".into(),
    ];
    want.resize(ROWS - 1, String::new());
    let footer = format!("[{a} | {b}] --- [Summary] --- [F2: Monitor] --- [F3: Resources]");
    want.push(format!(
        "{footer}{}",
        "─".repeat(COLS - footer.chars().count())
    ));
    assert_eq!(masked(&screen), want);

    tty.keys("\u{1b}[C"); // → : the next node
    let screen = tty.wait_for(&["dash-2 Talos (v1.13.7)", "eth0: link up"]);
    assert_eq!(
        masked(&screen[2..5]),
        [
            " UUID       <uuid: 8-4-4-4-1 hex>    TYPE       n/a           HOST         dash-2".to_string(),
            format!(" <uuid rest>                          KUBERNETES n/a           IP           {b}/24"),
            format!(" CLUSTER    n/a n/a                   KUBELET    n/a           GW           {gw}"),
        ]
    );
    tty.keys("\u{1b}OQ"); // F2: the Monitor screen
    let screen = tty.wait_for(&["[F1: Summary] --- [Monitor]", "COMMAND", "/sbin/init"]);
    let screen = masked(&screen);
    assert_eq!(
        screen[2],
        " CPU           CPU                         LOAD          PROCS         MEMORY"
    );
    assert_eq!(
        screen[8],
        "         CPU USER/SYSTEM                     MEM USED                       LOAD AVG 60sec"
    );
    assert_eq!(
        screen[15],
        " NET                      PID S CPU% MEM%   VIRT    RES TIME+ THR COMMAND"
    );
    assert_eq!(screen[22], " DISK");
    tty.keys("h"); // back to the first node
    tty.wait_for(&["dash-1 Talos"]);
    tty.keys("\u{1b}OP"); // F1
    tty.wait_for(&["[Summary] --- [F2: Monitor]", "HOST         dash-1"]);

    tty.keys("q");
    assert!(tty.wait(Duration::from_secs(5)), "{}", tty.transcript());
    // The terminal is given back: the alternate screen left, the cursor shown again.
    let t = tty.transcript();
    assert!(
        t.contains("\u{1b}[?1049l") && t.contains("\u{1b}[?25h"),
        "{t:?}"
    );
}

/// Renders the README's picture from two simulated nodes (a bootstrapped control plane and a
/// worker) and writes it to docs/dashboard.svg. Run by hand after the dashboard's look changed:
/// `cargo test --test integration dashboard::picture -- --ignored`.
#[test]
#[ignore = "writes docs/dashboard.svg; run by hand"]
fn picture() {
    let addrs = net::addrs::<2>();
    let [cp, worker] = &addrs;
    let h = Nodes::start(&addrs, |spec| {
        spec.hardware.hostname = if spec.addr.to_string() == *cp {
            "cp-1".into()
        } else {
            "worker-1".into()
        };
    });
    h.install_control_plane(cp);
    h.install(worker, &config(MachineType::Worker, Some("/dev/nvme0n1")));
    let clients: Vec<Client> = addrs
        .iter()
        .map(|a| h.connect(a, admin()).unwrap())
        .collect();
    talm::talos::block_on(clients[0].bootstrap(machine::BootstrapRequest::default())).unwrap();
    // Let the nodes run a while so uptime, load and memory look like a machine at work.
    std::thread::sleep(Duration::from_secs(20));
    let mut state = State::new(addrs.clone());
    for round in 0..2 {
        if round > 0 {
            std::thread::sleep(Duration::from_secs(3));
        }
        for (i, c) in clients.iter().enumerate() {
            state.apply(Update::Sample {
                node: i,
                sample: Box::new(sample(c)),
            });
            let kernel = talm::talos::block_on(source::kernel_log(c));
            state.apply(Update::Kernel {
                node: i,
                result: kernel,
            });
        }
    }
    state.now = time::OffsetDateTime::now_utc().unix_timestamp() as u64;
    let buf = talm::dashboard::frame(&state, 120, 19);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dashboard.svg");
    std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).unwrap();
    std::fs::write(path, talm::dashboard::to_svg(&buf)).unwrap();
}
