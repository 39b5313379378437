//! What a simulated node's services have logged by the time anyone reads them: a few lines of
//! each service's start-up in its own program's format, timed from the boot. machined and its
//! controller runtime print Talos's `YYYY/MM/DD HH:MM:SS.ffffff [talos] ...`, apid and trustd
//! Go's `log` with `Lshortfile`, containerd and its CRI instance logrus's `time="..."
//! level=info msg="..."`, etcd zap's JSON lines, the kubelet klog's `I1206 04:59:02.123456`
//! headers, udevd systemd-udevd's plain messages.

use time::OffsetDateTime;

use super::journal::{machined_stamp, rfc3339_nano};
use crate::world::KUBERNETES_VERSION;

/// The kubelet's (and its klog's thread) PID in the simulated process table's range.
const KUBELET_PID: u32 = 2214;

/// When a service's first line is printed, after the boot (ms), and the step between lines.
fn start_ms(svc: &str) -> i64 {
    match svc {
        "machined" => 40,
        "controller-runtime" | "dns-resolve-cache" => 180,
        "udevd" => 620,
        "apid" | "trustd" => 2100,
        "containerd" => 2600,
        "cri" => 3900,
        "etcd" => 5200,
        "kubelet" => 6100,
        _ => 1000,
    }
}

/// Go's `log` with `Ldate | Ltime | Lmicroseconds | Lshortfile`.
fn go_log(t: OffsetDateTime, file: &str, msg: &str) -> String {
    format!("{} {file}: {msg}", machined_stamp(t))
}

/// klog's header: severity, `mmdd hh:mm:ss.uuuuuu`, the thread ID 7 wide, `file:line]`.
fn klog(t: OffsetDateTime, file: &str, msg: &str) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "I{:02}{:02} {:02}:{:02}:{:02}.{:06} {KUBELET_PID:>7} {file}] {msg}",
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// etcd's zap JSON: level, ts (RFC 3339, microseconds), caller, msg, then fields (JSON text).
fn etcd(t: OffsetDateTime, caller: &str, msg: &str, fields: &str) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let ts = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    );
    let fields = if fields.is_empty() {
        String::new()
    } else {
        format!(",{fields}")
    };
    format!(r#"{{"level":"info","ts":"{ts}","caller":"{caller}","msg":"{msg}"{fields}}}"#)
}

/// logrus's text format as containerd prints it.
fn logrus(t: OffsetDateTime, msg: &str, fields: &str) -> String {
    let fields = if fields.is_empty() {
        String::new()
    } else {
        format!(" {fields}")
    };
    format!(
        "time=\"{}\" level=info msg=\"{msg}\"{fields}",
        rfc3339_nano(t)
    )
}

/// The lines `svc` has logged since a boot at `booted` of Talos `version`.
pub fn lines(svc: &str, booted: OffsetDateTime, version: &str) -> Vec<String> {
    let start = booted + time::Duration::milliseconds(start_ms(svc));
    // Each line a little after the one before: 13.7 ms apart, give or take.
    let at =
        |i: usize| start + time::Duration::microseconds(13_700 * i as i64 + 211 * (i as i64 % 3));
    let talos = |i: usize, text: &str| format!("{} [talos] {text}", machined_stamp(at(i)));
    let k8s = KUBERNETES_VERSION;
    match svc {
        "machined" => [
            format!("[initramfs] booting Talos {version}"),
            "task setupLogger (1/1): done, 106.11µs".into(),
            "phase logger (1/7): done, 392.96µs".into(),
            "phase systemRequirements (2/7): 7 tasks(s)".into(),
            "task mountPseudoFilesystems (1/7): starting".into(),
            "task mountPseudoFilesystems (1/7): done, 1.20981ms".into(),
            "phase systemRequirements (2/7): done, 49.94471ms".into(),
            "phase integrity (3/7): 1 tasks(s)".into(),
            "task writeIMAPolicy (1/1): starting".into(),
            "phase integrity (3/7): done, 2.00231ms".into(),
            "service[machined](Starting): Starting service".into(),
            "service[machined](Running): Service started as goroutine".into(),
            "service[apid](Waiting): Waiting for service \"containerd\" to be \"up\", api certificates".into(),
            r#"service[udevd](Running): Process Process(["/sbin/udevd" "--resolve-names=never"]) started with PID 1893"#.into(),
        ]
        .iter()
        .enumerate()
        .map(|(i, l)| talos(i, l))
        .collect(),
        "controller-runtime" => [
            r#"setting hostname {"component": "controller-runtime", "controller": "network.HostnameSpecController", "hostname": "talos-node", "domainname": ""}"#,
            r#"assigned address {"component": "controller-runtime", "controller": "network.AddressSpecController", "address": "127.0.0.1/8", "link": "lo"}"#,
            r#"setting time servers {"component": "controller-runtime", "controller": "network.TimeServerSpecController", "addresses": ["time.cloudflare.com"]}"#,
            r#"setting resolvers {"component": "controller-runtime", "controller": "network.ResolverSpecController", "resolvers": ["1.1.1.1", "8.8.8.8"]}"#,
            r#"kubelet service config updated {"component": "controller-runtime", "controller": "k8s.KubeletServiceController"}"#,
            r#"volume status {"component": "controller-runtime", "controller": "block.VolumeManagerController", "volume": "EPHEMERAL", "phase": "waiting -> ready"}"#,
        ]
        .iter()
        .enumerate()
        .map(|(i, l)| talos(i, l))
        .collect(),
        "dns-resolve-cache" => [
            r#"starting dns resolve cache {"component": "dns-resolve-cache", "addr": "127.0.0.53:53"}"#,
            r#"dns resolve cache is listening {"component": "dns-resolve-cache", "net": "udp", "addr": "127.0.0.53:53"}"#,
            r#"dns resolve cache is listening {"component": "dns-resolve-cache", "net": "tcp", "addr": "127.0.0.53:53"}"#,
        ]
        .iter()
        .enumerate()
        .map(|(i, l)| talos(i, l))
        .collect(),
        "apid" => vec![
            go_log(at(0), "service.go:36", "starting apid with config: listen address [::]:50000, skip client cert verify false, node routing disabled false, readonly role mode false"),
            go_log(at(1), "provider.go:91", "apid certificates are ready"),
            go_log(at(2), "main.go:157", "apid is serving on [::]:50000"),
        ],
        "trustd" => vec![
            go_log(at(0), "main.go:88", "trustd is serving on [::]:50001"),
            go_log(at(1), "provider.go:72", "trustd certificates are ready"),
        ],
        "containerd" | "cri" => {
            let (state, root) = if svc == "cri" {
                ("/run/containerd", "/var/lib/containerd")
            } else {
                ("/system/run/containerd", "/system/var/lib/containerd")
            };
            [
                ("starting containerd".to_string(), "revision=1b5a2b2f1d7a8b0a9c4e6d9a2c3d1e0f5a6b7c8d version=v2.1.4".to_string()),
                ("loading plugin".into(), "id=io.containerd.content.v1.content type=io.containerd.content.v1".into()),
                ("loading plugin".into(), "id=io.containerd.snapshotter.v1.overlayfs type=io.containerd.snapshotter.v1".into()),
                ("loading plugin".into(), "id=io.containerd.metadata.v1.bolt type=io.containerd.metadata.v1".into()),
                (format!("serving... address={state}/containerd.sock.ttrpc"), String::new()),
                (format!("serving... address={state}/containerd.sock"), String::new()),
                ("containerd successfully booted in 0.041812s".into(), format!("root={root}")),
            ]
            .iter()
            .enumerate()
            .map(|(i, (m, f))| logrus(at(i), m, f))
            .collect()
        }
        "etcd" => vec![
            etcd(at(0), "embed/etcd.go:138", "configuring peer listeners", r#""listen-peer-urls":["https://[::]:2380"]"#),
            etcd(at(1), "embed/etcd.go:146", "configuring client listeners", r#""listen-client-urls":["https://[::]:2379"]"#),
            etcd(at(2), "embed/etcd.go:323", "starting an etcd server", r#""etcd-version":"3.6.5","git-sha":"GitNotFound","go-version":"go1.24.9","go-os":"linux","go-arch":"amd64","data-dir":"/var/lib/etcd","name":"talos-node""#),
            etcd(at(3), "etcdserver/server.go:532", "bootstrapping cluster", ""),
            etcd(at(4), "etcdserver/server.go:789", "starting etcd server", r#""local-member-id":"8e9e05c52164694d","local-server-version":"3.6.5","cluster-version":"to_be_decided""#),
            etcd(at(5), "embed/etcd.go:640", "serving peer traffic", r#""address":"[::]:2380""#),
            etcd(at(6), "embed/serve.go:190", "serving client traffic securely", r#""traffic":"grpc+http","address":"[::]:2379""#),
        ],
        "kubelet" => vec![
            klog(at(0), "server.go:212", "\"--pod-infra-container-image will not be pruned by the image garbage collector in kubelet and should also be set in the remote runtime\""),
            klog(at(1), "server.go:487", &format!("\"Kubelet version\" kubeletVersion=\"{k8s}\"")),
            klog(at(2), "server.go:489", "\"Golang settings\" GOGC=\"\" GOMAXPROCS=\"\" GOTRACEBACK=\"\""),
            klog(at(3), "server.go:956", "\"Client rotation is on, will bootstrap in background\""),
            klog(at(4), "container_manager_linux.go:270", "\"Container manager verified user specified cgroup-root exists\" cgroupRoot=[]"),
            klog(at(5), "kubelet.go:480", "\"Attempting to sync node with API server\""),
            klog(at(6), "kuberuntime_manager.go:262", "\"Container runtime initialized\" containerRuntime=\"containerd\" version=\"v2.1.4\" apiVersion=\"v1\""),
            klog(at(7), "server.go:1262", "\"Started kubelet\""),
            klog(at(8), "kubelet_node_status.go:75", "\"Attempting to register node\" node=\"talos-node\""),
            klog(at(9), "kubelet_node_status.go:78", "\"Successfully registered node\" node=\"talos-node\""),
        ],
        "udevd" => [
            "starting version 257.9",
            "Using default interface naming scheme 'v257'.",
            "Configuration file /usr/lib/udev/rules.d/99-talos.rules is marked executable. Please remove executable permission bits. Proceeding anyway.",
        ]
        .iter()
        .map(|l| l.to_string())
        .collect(),
        _ => vec![talos(0, &format!("service[{svc}](Running): Started task {svc}"))],
    }
}
