//! The catalogue of what a simulated Talos node runs, by role and state: machined as PID 1,
//! udevd, Talos's containerd and the CRI's, apid and trustd, etcd and kubelet as system
//! containers, the Kubernetes control plane and CoreDNS on a control plane whose etcd runs,
//! kube-proxy and flannel on every configured node; each with its command line, threads,
//! memory, CPU rate, SELinux label and cgroup as Talos sets them.

use super::workload::{Builder, Qos, Spec, Workload, POD_LABEL};
use super::{suffix, World};

pub(crate) const FLANNEL_IMAGE: &str = "ghcr.io/siderolabs/flannel:v0.28.7";
const INSTALL_CNI_IMAGE: &str = "ghcr.io/siderolabs/install-cni:v1.13.0";
pub(crate) const COREDNS_IMAGE: &str = "registry.k8s.io/coredns/coredns:v1.14.4";

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

pub(super) fn shim<'a>(ns: &str, id: &str, run: &str, cgroup: &str, start: f64) -> Spec<'a> {
    Spec {
        comm: "containerd-shim",
        exe: "/bin/containerd-shim-runc-v2",
        args: words(&format!(
            "/bin/containerd-shim-runc-v2 -namespace {ns} -id {id} -address {run}/containerd.sock"
        )),
        threads: 10,
        rss_mib: 11.5,
        vsz_mib: 1236.0,
        rate: 0.0006,
        label: if ns == "system" {
            "system_u:system_r:sys_containerd_t:s0"
        } else {
            "system_u:system_r:pod_containerd_t:s0"
        },
        cgroup: cgroup.to_string(),
        uid: 0,
        start,
    }
}

#[allow(clippy::too_many_arguments)]
fn simple<'a>(
    comm: &'a str,
    exe: &'a str,
    args: &str,
    threads: i32,
    rss_mib: f64,
    vsz_mib: f64,
    rate: f64,
    label: &'a str,
    cgroup: &str,
    start: f64,
) -> Spec<'a> {
    Spec {
        comm,
        exe,
        args: words(args),
        threads,
        rss_mib,
        vsz_mib,
        rate,
        label,
        cgroup: cgroup.to_string(),
        uid: 0,
        start,
    }
}

/// What runs on the node in `w`.
pub fn build(w: &World) -> Workload {
    let mut b = Builder {
        w,
        next_pid: 600 + (w.rand("pid-base") % 300) as i32,
        out: Workload::default(),
    };
    let (ip, host, k8s) = (w.ip(), w.hostname.clone(), w.kubernetes.clone());
    b.spawn(
        0,
        simple(
            "init",
            "/sbin/init",
            "/sbin/init",
            14,
            92.0,
            1420.0,
            0.02,
            "system_u:system_r:init_t:s0",
            "/init",
            0.0,
        ),
    );
    if w.running("udevd") {
        b.spawn(
            1,
            simple(
                "systemd-udevd",
                "/sbin/systemd-udevd",
                "/sbin/systemd-udevd --resolve-names=never",
                1,
                9.0,
                22.0,
                0.0004,
                "system_u:system_r:udev_t:s0",
                "/system/udevd",
                1.6,
            ),
        );
    }
    b.spawn(1, simple("containerd", "/bin/containerd", "/bin/containerd --address /system/run/containerd/containerd.sock --state /system/run/containerd --root /system/var/lib/containerd", 12, 36.0, 1890.0, 0.003, "system_u:system_r:sys_containerd_t:s0", "/system/runtime", 2.1));
    if w.running("apid") {
        let mut apid = simple(
            "apid",
            "/apid",
            "/apid",
            11,
            44.0,
            1310.0,
            0.003,
            "system_u:system_r:apid_t:s0",
            "/system/apid",
            3.0,
        );
        apid.uid = 50;
        b.system_container("apid", String::new(), "/system/apid", apid);
    }
    if w.running("trustd") {
        let mut trustd = simple(
            "trustd",
            "/trustd",
            "/trustd",
            9,
            24.0,
            1250.0,
            0.0006,
            "system_u:system_r:trustd_t:s0",
            "/system/trustd",
            3.4,
        );
        trustd.uid = 51;
        b.system_container("trustd", String::new(), "/system/trustd", trustd);
    }
    if w.running("cri") {
        b.spawn(1, simple("containerd", "/bin/containerd", "/bin/containerd --address /run/containerd/containerd.sock --config /etc/cri/containerd.toml", 14, 61.0, 2410.0, 0.006, "system_u:system_r:pod_containerd_t:s0", "/podruntime/runtime", 4.2));
    }
    if w.running("etcd") {
        let args = format!("/usr/local/bin/etcd --advertise-client-urls=https://{ip}:2379 --auto-tls=false --cert-file=/system/secrets/etcd/peer.crt --client-cert-auth=true --data-dir=/var/lib/etcd --experimental-compact-hash-check-enabled=true --experimental-initial-corrupt-check=true --initial-advertise-peer-urls=https://{ip}:2380 --initial-cluster={host}=https://{ip}:2380 --initial-cluster-state=new --key-file=/system/secrets/etcd/peer.key --listen-client-urls=https://0.0.0.0:2379 --listen-metrics-urls=http://localhost:2381 --listen-peer-urls=https://0.0.0.0:2380 --name={host} --peer-auto-tls=false --peer-cert-file=/system/secrets/etcd/peer.crt --peer-client-cert-auth=true --peer-key-file=/system/secrets/etcd/peer.key --peer-trusted-ca-file=/system/secrets/etcd/ca.crt --trusted-ca-file=/system/secrets/etcd/ca.crt");
        let etcd = simple(
            "etcd",
            "/usr/local/bin/etcd",
            &args,
            13,
            138.0,
            11_520.0,
            0.03,
            "system_u:system_r:etcd_t:s0",
            "/podruntime/etcd",
            6.0,
        );
        b.system_container(
            "etcd",
            super::ETCD_IMAGE.to_string(),
            "/podruntime/etcd",
            etcd,
        );
    }
    if w.running("kubelet") {
        let args = format!("/usr/local/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubeconfig --cert-dir=/var/lib/kubelet/pki --config=/etc/kubernetes/kubelet.yaml --hostname-override={host} --kubeconfig=/etc/kubernetes/kubeconfig-kubelet --node-ip={ip}");
        let kubelet = simple(
            "kubelet",
            "/usr/local/bin/kubelet",
            &args,
            15,
            84.0,
            2130.0,
            0.02,
            "system_u:system_r:kubelet_t:s0",
            "/podruntime/kubelet",
            6.5,
        );
        b.system_container(
            "kubelet",
            format!("ghcr.io/siderolabs/kubelet:{k8s}"),
            "/podruntime/kubelet",
            kubelet,
        );
    }
    let k8s_image = |name: &str| format!("registry.k8s.io/{name}:{k8s}");
    if w.etcd && w.running("kubelet") {
        let api = format!("/usr/local/bin/kube-apiserver --admission-control-config-file=/system/config/kubernetes/kube-apiserver/admission-control-config.yaml --advertise-address={ip} --allow-privileged=true --api-audiences=https://{ip}:6443 --authorization-mode=Node,RBAC --bind-address=0.0.0.0 --client-ca-file=/system/secrets/kubernetes/kube-apiserver/ca.crt --enable-admission-plugins=NodeRestriction --etcd-servers=https://localhost:2379 --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname --secure-port=6443 --service-cluster-ip-range=10.96.0.0/12 --tls-cert-file=/system/secrets/kubernetes/kube-apiserver/apiserver.crt --tls-private-key-file=/system/secrets/kubernetes/kube-apiserver/apiserver.key");
        let img = k8s_image("kube-apiserver");
        b.pod(
            "kube-system",
            format!("kube-apiserver-{host}"),
            false,
            Qos::Burstable,
            12.0,
            vec![(
                "kube-apiserver",
                &img,
                Some(simple(
                    "kube-apiserver",
                    "/usr/local/bin/kube-apiserver",
                    &api,
                    15,
                    380.0,
                    1950.0,
                    0.08,
                    POD_LABEL,
                    "",
                    13.0,
                )),
            )],
        );
        let img = k8s_image("kube-controller-manager");
        b.pod("kube-system", format!("kube-controller-manager-{host}"), false, Qos::Burstable, 12.4, vec![("kube-controller-manager", &img, Some(simple("kube-controller", "/usr/local/bin/kube-controller-manager", "/usr/local/bin/kube-controller-manager --allocate-node-cidrs=true --bind-address=127.0.0.1 --cluster-cidr=10.244.0.0/16 --kubeconfig=/system/secrets/kubernetes/kube-controller-manager/kubeconfig --leader-elect=true --use-service-account-credentials", 9, 86.0, 1330.0, 0.015, POD_LABEL, "", 13.5)))]);
        let img = k8s_image("kube-scheduler");
        b.pod("kube-system", format!("kube-scheduler-{host}"), false, Qos::Burstable, 12.8, vec![("kube-scheduler", &img, Some(simple("kube-scheduler", "/usr/local/bin/kube-scheduler", "/usr/local/bin/kube-scheduler --bind-address=127.0.0.1 --config=/system/config/kubernetes/kube-scheduler/scheduler-config.yaml --leader-elect=true", 10, 41.0, 1290.0, 0.004, POD_LABEL, "", 14.0)))]);
        let rs = w.hex("coredns-rs", 10);
        b.pod(
            "kube-system",
            format!("coredns-{rs}-{}", suffix(w.seed, "coredns", 5)),
            true,
            Qos::Burstable,
            30.0,
            vec![(
                "coredns",
                COREDNS_IMAGE,
                Some(simple(
                    "coredns",
                    "/coredns",
                    "/coredns -conf /etc/coredns/Corefile",
                    9,
                    22.0,
                    1280.0,
                    0.001,
                    POD_LABEL,
                    "",
                    31.0,
                )),
            )],
        );
    }
    if (w.etcd || w.role == super::Role::Worker) && w.running("kubelet") {
        let proxy = format!("/usr/local/bin/kube-proxy --cluster-cidr=10.244.0.0/16 --conntrack-max-per-core=0 --hostname-override={host} --kubeconfig=/etc/kubernetes/kubeconfig --proxy-mode=iptables");
        let img = k8s_image("kube-proxy");
        b.pod(
            "kube-system",
            format!("kube-proxy-{}", suffix(w.seed, "kube-proxy", 5)),
            false,
            Qos::BestEffort,
            20.0,
            vec![(
                "kube-proxy",
                &img,
                Some(simple(
                    "kube-proxy",
                    "/usr/local/bin/kube-proxy",
                    &proxy,
                    8,
                    31.0,
                    1290.0,
                    0.001,
                    POD_LABEL,
                    "",
                    21.0,
                )),
            )],
        );
        b.pod(
            "kube-system",
            format!("kube-flannel-{}", suffix(w.seed, "kube-flannel", 5)),
            false,
            Qos::Burstable,
            20.5,
            vec![
                ("install-cni", INSTALL_CNI_IMAGE, None),
                ("install-config", FLANNEL_IMAGE, None),
                (
                    "kube-flannel",
                    FLANNEL_IMAGE,
                    Some(simple(
                        "flanneld",
                        "/opt/bin/flanneld",
                        "/opt/bin/flanneld --ip-masq --kube-subnet-mgr",
                        10,
                        27.0,
                        1300.0,
                        0.001,
                        POD_LABEL,
                        "",
                        23.0,
                    )),
                ),
            ],
        );
    }
    b.out
}
