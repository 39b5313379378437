//! The content of a simulated node's resources: through the real binary and flow (apply,
//! bootstrap, upgrade) the resources that follow the node (its stage and readiness, Talos
//! version, etcd member, control plane configs and cluster members); through the API, specs
//! exactly as Talos writes them (Go struct key order, non-`omitempty` fields always there,
//! empty `omitempty` ones absent).

use std::future::Future;
use std::time::Duration;

use talm::config::generate::MachineType;
use talm::sim::net::faults::Faults;
use talm::sim::net::unhealthy::Unhealthy;
use talm::talos::client::Client;

use crate::common::expect::addrs;
use crate::common::sim::{admin, config, mutual, Nodes};
use crate::common::{net, Dir};

fn on<T>(f: impl Future<Output = T>) -> T {
    talm::talos::block_on(f)
}

/// RFC 3339 stamps (`2026-12-06T05:10:00Z`) as `$STAMP`, then the addresses as `$A1`...
fn masked(text: &str) -> String {
    let re = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    addrs(&re.replace_all(text, "$$STAMP"))
}

/// `talm get <args> -f <file> -o yaml`, masked.
fn get(d: &Dir, file: &str, args: &[&str]) -> String {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-f", file, "-o", "yaml"]);
    masked(&d.talm(all).ok().stdout)
}

/// One JSONPath value of each resource of a type.
fn path(d: &Dir, file: &str, kind: &str, jsonpath: &str) -> String {
    d.talm([
        "get",
        kind,
        "-f",
        file,
        "-o",
        &format!("jsonpath={jsonpath}"),
    ])
    .ok()
    .stdout
}

fn machine_status(version: u32, ready: bool, unmet: &str) -> String {
    format!(
        "\
node: $A1
metadata:
    namespace: runtime
    type: MachineStatuses.runtime.talos.dev
    id: machine
    version: {version}
    owner: runtime.MachineStatusController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    stage: running
    status:
        ready: {ready}
        unmetConditions:{unmet}
"
    )
}

fn talos_version(tag: &str) -> String {
    format!(
        "\
node: $A1
metadata:
    namespace: runtime
    type: Versions.runtime.talos.dev
    id: version
    version: 1
    owner: runtime.VersionController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    name: Talos
    version: {tag}
"
    )
}

#[test]
fn content_follows_bootstrap_and_upgrade() {
    let [cp, worker] = net::addrs();
    let nodes = Nodes::start(&[&cp, &worker], |s| {
        s.hardware.extensions = vec!["hello".into()]
    });
    let d = nodes.cluster(&cp, &worker);
    let (cpf, wf) = ("nodes/cp.yaml", "nodes/worker.yaml");
    let cp_name = path(&d, cpf, "nodename", "{.spec.nodename}");
    let w_name = path(&d, wf, "nodename", "{.spec.nodename}");
    let (cp_name, w_name) = (cp_name.trim(), w_name.trim());
    assert!(!cp_name.is_empty() && cp_name != w_name);

    // Configured, etcd not bootstrapped: running, waiting for etcd and the node's status.
    assert_eq!(
        get(&d, cpf, &["machinestatus"]).replace(cp_name, "$NAME"),
        machine_status(
            4,
            false,
            "
            - name: services
              reason: etcd not running
            - name: nodeReady
              reason: node \"$NAME\" status is not available yet"
        )
    );
    assert_eq!(get(&d, cpf, &["etcdmember"]), "");
    // Only control planes have the control plane's configs.
    assert_eq!(
        path(&d, cpf, "apiserverconfig", "{.metadata.id}"),
        "kube-apiserver\n"
    );
    assert_eq!(get(&d, wf, &["apiserverconfig"]), "");
    // Both nodes of the cluster are members, each seen from the other.
    let mut both = [cp_name, w_name];
    both.sort();
    let ids = format!("{}\n{}\n", both[0], both[1]);
    assert_eq!(path(&d, cpf, "members", "{.metadata.id}"), ids);
    assert_eq!(path(&d, wf, "members", "{.metadata.id}"), ids);

    // Services are the running services `talm service` lists, an extension's among them,
    // and one stopped through the API is gone.
    let running = |file: &str| {
        let list = d.talm(["service", "-f", file]).ok().stdout;
        let ids: Vec<String> = list
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| w.get(2) == Some(&"Running"))
            .map(|w| format!("{}\n", w[1]))
            .collect();
        ids.concat()
    };
    let services = path(&d, wf, "services", "{.metadata.id}");
    assert_eq!(
        services,
        "apid\ncontainerd\ncri\next-hello\nkubelet\nmachined\ntrustd\nudevd\n"
    );
    assert_eq!(services, running(wf));
    d.talm(["service", "ext-hello", "stop", "-f", wf]).ok();
    let services = path(&d, wf, "services", "{.metadata.id}");
    assert_eq!(
        services,
        "apid\ncontainerd\ncri\nkubelet\nmachined\ntrustd\nudevd\n"
    );
    assert_eq!(services, running(wf));

    d.talm(["bootstrap", "-f", cpf]).ok();
    let start = std::time::Instant::now();
    while nodes.node(&cp).state().etcd.is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "etcd runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The same MachineStatus, one version on, ready; the worker's too.
    assert_eq!(
        get(&d, cpf, &["machinestatus"]),
        machine_status(5, true, " []")
    );
    assert_eq!(
        get(&d, wf, &["machinestatus"]),
        machine_status(5, true, " []")
    );
    let member = nodes.node(&cp).state().etcd.as_ref().unwrap().id;
    assert_eq!(
        get(&d, cpf, &["etcdmember"]),
        format!(
            "\
node: $A1
metadata:
    namespace: etcd
    type: EtcdMembers.etcd.talos.dev
    id: local
    version: 1
    owner: etcd.MemberController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    memberID: {member:016x}
"
        )
    );
    assert_eq!(get(&d, wf, &["etcdmember"]), "");

    // An upgrade: the worker runs the new version, and its member says so to the others.
    assert_eq!(get(&d, wf, &["version"]), talos_version("v1.13.7"));
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        wf,
        "--image",
        "ghcr.io/siderolabs/installer:v1.13.9",
    ])
    .ok();
    assert_eq!(get(&d, wf, &["version"]), talos_version("v1.13.9"));
    let os = |file| {
        d.talm([
            "get",
            "members",
            w_name,
            "-f",
            file,
            "-o",
            "jsonpath={.metadata.version} {.spec.operatingSystem}",
        ])
        .ok()
        .stdout
    };
    assert_eq!(os(cpf), "2\n \nTalos (v1.13.9)\n");
}

/// The broadcast address of a /24.
fn broadcast(ip: &str) -> String {
    let (net, _) = ip.rsplit_once('.').unwrap();
    format!("{net}.255")
}

/// The raw YAML spec a node serves for a resource.
fn spec(c: &Client, ns: &str, ty: &str, id: &str) -> String {
    let r = on(c.get(ns, ty, id)).unwrap();
    r.unwrap_or_else(|| panic!("{ty} {id}"))
        .spec
        .unwrap()
        .yaml_spec
}

#[test]
fn specs_are_written_as_talos_writes_them() {
    let lan = net::subnet(24);
    let (cp, worker) = (lan.host(2), lan.host(3));
    let nodes = Nodes::start(&[&cp, &worker], |_| {});
    nodes.install(
        &cp,
        &config(MachineType::ControlPlane, Some("/dev/nvme0n1")),
    );
    let worker_config = config(MachineType::Worker, Some("/dev/nvme0n1"));
    nodes.install(&worker, &worker_config);
    let c = nodes.connect(&cp, admin()).unwrap();
    let w = nodes.connect(&worker, admin()).unwrap();
    let net = "network";
    assert_eq!(
        spec(&c, net, "LinkStatuses.net.talos.dev", "lo"),
        "\
index: 1
type: loopback
linkIndex: 0
flags: UP,LOOPBACK,RUNNING,LOWER_UP
hardwareAddr: \"00:00:00:00:00:00\"
permanentAddr: \"\"
broadcastAddr: \"00:00:00:00:00:00\"
mtu: 65536
queueDisc: noqueue
operationalState: unknown
kind: \"\"
slaveKind: \"\"
linkState: true
port: Other
duplex: Unknown
"
    );
    assert_eq!(
        spec(
            &c,
            net,
            "AddressStatuses.net.talos.dev",
            &format!("eth0/{cp}/24")
        ),
        format!(
            "\
address: {cp}/24
local: {cp}
broadcast: {}
linkIndex: 2
linkName: eth0
family: inet4
scope: global
flags: permanent
priority: 1024
",
            broadcast(&cp)
        )
    );
    assert_eq!(
        spec(&c, net, "AddressStatuses.net.talos.dev", "lo/127.0.0.1/8"),
        "\
address: 127.0.0.1/8
local: 127.0.0.1
linkIndex: 1
linkName: lo
family: inet4
scope: host
flags: permanent
priority: 0
"
    );
    // `rotational: false` is left out (omitempty).
    assert_eq!(
        spec(&c, "runtime", "Disks.block.talos.dev", "nvme0n1"),
        "\
dev_path: /dev/nvme0n1
size: 34359738368
pretty_size: 34 GB
io_size: 512
sector_size: 512
readonly: false
cdrom: false
model: QEMU NVMe Ctrl
serial: deadbeef
wwid: nvme.1b36-6465616462656566-51454d55204e564d65204374726c-00000001
bus_path: /pci0000:00/0000:00:05.0/nvme0n1
sub_system: /sys/class/block
transport: nvme
symlinks:
    - /dev/disk/by-path/pci-0000:00:05.0
    - /dev/disk/by-id/nvme-nvme.1b36-6465616462656566-51454d55204e564d65204374726c-00000001
"
    );
    assert_eq!(
        spec(&c, "runtime", "MountStatuses.runtime.talos.dev", "EPHEMERAL"),
        "source: /dev/nvme0n1p4\ntarget: /var\nfilesystemType: xfs\noptions: []\nencrypted: false\n"
    );
    assert_eq!(
        spec(&c, "runtime", "SecurityStates.talos.dev", "securitystate"),
        "secureBoot: false\nselinuxState: enabled, permissive\nmoduleSignatureEnforced: true\n"
    );
    assert_eq!(
        spec(&c, "runtime", "TimeStatuses.v1alpha1.talos.dev", "node"),
        "synced: true\nepoch: 0\nsyncDisabled: false\n"
    );
    assert_eq!(
        spec(&c, "runtime", "Services.v1alpha1.talos.dev", "machined"),
        "running: true\nhealthy: false\nunknown: true\n"
    );
    assert_eq!(
        spec(&c, "runtime", "Services.v1alpha1.talos.dev", "apid"),
        "running: true\nhealthy: true\nunknown: false\n"
    );
    // A service failing its health check (a fault) is running, unhealthy, and unmet.
    let kubelet = || spec(&w, "runtime", "Services.v1alpha1.talos.dev", "kubelet");
    assert_eq!(kubelet(), "running: true\nhealthy: true\nunknown: false\n");
    nodes.node(&worker).set_faults(Faults {
        unhealthy: Some(Unhealthy {
            services: vec!["kubelet".into()],
            version: None,
        }),
        ..Default::default()
    });
    assert_eq!(kubelet(), "running: true\nhealthy: false\nunknown: false\n");
    assert_eq!(
        spec(
            &w,
            "runtime",
            "MachineStatuses.runtime.talos.dev",
            "machine"
        ),
        format!(
            "\
stage: running
status:
    ready: false
    unmetConditions:
        - name: services
          reason: kubelet not healthy
        - name: nodeReady
          reason: node \"{}\" status is not available yet
",
            spec(&w, "k8s", "Nodenames.kubernetes.talos.dev", "nodename")
                .lines()
                .next()
                .unwrap()
                .trim_start_matches("nodename: ")
        )
    );
    nodes.node(&worker).set_faults(Faults::default());
    assert_eq!(
        spec(&c, "hardware", "Processors.hardware.talos.dev", "CPU-0"),
        "\
socket: CPU 0
manufacturer: QEMU
productName: pc-q35-9.2
maxSpeedMhz: 2000
bootSpeedMhz: 2000
status: 65
coreCount: 4
coreEnabled: 4
threadCount: 4
"
    );
    assert_eq!(
        spec(&c, "hardware", "MemoryModules.hardware.talos.dev", "DIMM-0"),
        "sizeMiB: 4096\ndeviceLocator: DIMM 0\nmanufacturer: QEMU\n"
    );
    let name = spec(&c, "k8s", "Nodenames.kubernetes.talos.dev", "nodename");
    let cp_name = name
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("nodename: "))
        .unwrap()
        .to_string();
    assert_eq!(
        name,
        format!("nodename: {cp_name}\nhostnameVersion: \"1\"\nskipNodeRegistration: false\n")
    );
    assert_eq!(
        spec(
            &c,
            "controlplane",
            "APIServerConfigs.kubernetes.talos.dev",
            "kube-apiserver"
        ),
        "\
image: registry.k8s.io/kube-apiserver:v1.36.2
cloudProvider: \"\"
controlPlaneEndpoint: https://127.0.0.1:6443
etcdServers:
    - https://127.0.0.1:2379
localPort: 6443
serviceCIDR:
    - 10.96.0.0/12
extraArgs: {}
extraVolumes: []
environmentVariables: {}
advertisedAddress: $(POD_IP)
resources:
    requests:
        cpu: \"\"
        memory: \"\"
    limits: {}
"
    );
    assert!(on(w.get(
        "controlplane",
        "APIServerConfigs.kubernetes.talos.dev",
        "kube-apiserver"
    ))
    .unwrap()
    .is_none());
    // Secrets stay sensitive: readers are refused, admins read them. A worker's config holds
    // the machine CA's certificate only, so it has no issuing CA.
    let reader = nodes.connect(&cp, mutual(&["os:reader"])).unwrap();
    let refused = on(reader.get("secrets", "OSRootSecrets.secrets.talos.dev", "os")).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!("node {cp}: get OSRootSecrets.secrets.talos.dev: not authorized")
    );
    let doc = serde_yaml_ng::Deserializer::from_str(&worker_config)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .find(|d: &serde_yaml_ng::Value| d.get("machine").is_some())
        .unwrap();
    let (ca, token) = (
        doc["machine"]["ca"]["crt"].as_str().unwrap(),
        doc["machine"]["token"].as_str().unwrap(),
    );
    assert_eq!(
        spec(&w, "secrets", "OSRootSecrets.secrets.talos.dev", "os"),
        format!(
            "issuingCA: null\nacceptedCAs:\n    - crt: {ca}\ncertSANIPs: []\ncertSANDNSNames: []\ntoken: {token}\n"
        )
    );
    assert!(
        on(w.get("secrets", "EtcdRootSecrets.secrets.talos.dev", "etcd"))
            .unwrap()
            .is_none()
    );
    let etcd_root = spec(&c, "secrets", "EtcdRootSecrets.secrets.talos.dev", "etcd");
    assert_eq!(
        etcd_root
            .lines()
            .map(|l| l.split(':').next().unwrap())
            .collect::<Vec<_>>(),
        ["etcdCA", "    crt", "    key"]
    );

    // The control plane's member, as the worker's discovery shows it.
    let member = spec(&w, "cluster", "Members.cluster.talos.dev", &cp_name);
    let node_id = spec(&c, "cluster", "Identities.cluster.talos.dev", "local");
    let node_id = node_id.trim().strip_prefix("nodeId: ").unwrap();
    assert_eq!(node_id.len(), 43);
    assert_eq!(
        member,
        format!(
            "\
nodeId: {node_id}
addresses:
    - {cp}
hostname: {cp_name}
machineType: controlplane
operatingSystem: Talos (v1.13.7)
controlPlane:
    port: 6443
"
        )
    );
}

#[test]
fn get_prints_specs_in_the_order_talos_gives_their_keys() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let o = d
        .talm(["get", "links", "lo", "-n", &ip, "-i", "-o", "yaml"])
        .ok();
    // Go's struct order, as the node serves it (script maps would sort the keys).
    assert_eq!(
        masked(&o.stdout),
        "\
node: $A1
metadata:
    namespace: network
    type: LinkStatuses.net.talos.dev
    id: lo
    version: 1
    owner: network.LinkStatusController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    index: 1
    type: loopback
    linkIndex: 0
    flags: UP,LOOPBACK,RUNNING,LOWER_UP
    hardwareAddr: \"00:00:00:00:00:00\"
    permanentAddr: \"\"
    broadcastAddr: \"00:00:00:00:00:00\"
    mtu: 65536
    queueDisc: noqueue
    operationalState: unknown
    kind: \"\"
    slaveKind: \"\"
    linkState: true
    port: Other
    duplex: Unknown
"
    );
}
