//! `image k8s-bundle` and `image talos-bundle`: talosctl's image lists, for the project's
//! versions when run in one, asking nothing of a node.

use crate::common::Dir;

fn k8s(version: &str, etcd: &str) -> String {
    format!(
        "\
ghcr.io/siderolabs/flannel:0.28.7
registry.k8s.io/coredns/coredns:v1.14.4
registry.k8s.io/etcd:{etcd}
registry.k8s.io/pause:3.10.1
registry.k8s.io/kube-apiserver:{version}
registry.k8s.io/kube-controller-manager:{version}
registry.k8s.io/kube-scheduler:{version}
registry.k8s.io/kube-proxy:{version}
ghcr.io/siderolabs/kubelet:{version}
registry.k8s.io/networking/kube-network-policies:v1.1.0
"
    )
}

fn talos(tag: &str) -> String {
    [
        "installer",
        "installer-base",
        "imager",
        "talos",
        "talosctl-all",
        "overlays",
        "extensions",
    ]
    .iter()
    .map(|r| format!("ghcr.io/siderolabs/{r}:{tag}\n"))
    .collect()
}

#[test]
fn bundles_list_talos_defaults_outside_a_project() {
    let d = Dir::new();
    d.talm(["image", "k8s-bundle"])
        .expect()
        .stdout(k8s("v1.36.2", "v3.6.12"))
        .run();
    d.talm(["image", "default", "--etcd-version", "v3.6.11"])
        .expect()
        .stdout(k8s("v1.36.2", "v3.6.11"))
        .run();
    d.talm(["image", "talos-bundle"])
        .expect()
        .stdout(talos("v1.13.7"))
        .run();
    d.talm(["image", "talos-bundle", "v1.11.5"])
        .expect()
        .stdout(talos("v1.11.5"))
        .run();
}

#[test]
fn bundles_follow_the_projects_versions() {
    let d = Dir::project("generic");
    let chart = d.read("Chart.yaml");
    let chart = chart.replacen(
        "  kubernetesVersion: \"\"\n",
        "  kubernetesVersion: 1.35.4\n",
        1,
    );
    assert!(chart.contains("kubernetesVersion: 1.35.4"), "{chart}");
    d.write("Chart.yaml", &chart);
    // The generic preset names no installer image: the project's own line does.
    let values = d.read("values.yaml");
    assert!(!values.contains("\nimage:"), "{values}");
    d.write(
        "values.yaml",
        &format!("{values}image: ghcr.io/siderolabs/installer:v1.13.9\n"),
    );
    d.talm(["image", "k8s-bundle"])
        .expect()
        .stdout(k8s("v1.35.4", "v3.6.12"))
        .run();
    d.talm(["image", "talos-bundle"])
        .expect()
        .stdout(talos("v1.13.9"))
        .run();
    // A flag wins over the project.
    d.talm(["image", "k8s-bundle", "--k8s-version", "v1.36.0"])
        .expect()
        .stdout(k8s("v1.36.0", "v3.6.12"))
        .run();
}

#[test]
fn bundle_versions_are_checked_as_talosctl_checks_them() {
    let d = Dir::new();
    d.refuses(
        &["image", "talos-bundle", "1.13.7"],
        1,
        "Error: invalid tag \"1.13.7\": must have \"v\" prefix\nhint: give a Talos version such as v1.13.7\n",
    );
    d.refuses(
        &["image", "talos-bundle", "v1.10.9"],
        1,
        "Error: invalid tag \"v1.10.9\": must be between v1.11.0-alpha.0 (inclusive) and v1.14.0 (exclusive)\nhint: talm lists the bundles of the Talos versions it speaks\n",
    );
    d.refuses(
        &["image", "talos-bundle", "v1.x"],
        1,
        "Error: invalid argument \"v1.x\": tag must be a valid semver\nhint: give a Talos version such as v1.13.7\n",
    );
    d.refuses(
        &["image", "k8s-bundle", "--coredns-version", "latest"],
        1,
        "Error: invalid argument \"latest\" for \"--coredns-version\" flag: Invalid character(s) found in major number \"latest\"\nhint: give a version such as v1.14.4\n",
    );
}
