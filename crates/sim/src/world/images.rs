//! The container images a simulated node holds, per containerd store as ImageService.List
//! sees them: the CRI's Kubernetes images (each under its tag, its repository digest and its
//! ID, as containerd's CRI records them) and the system images (kubelet, etcd) — only those
//! of what runs or ran on the node.

use tonic::Status;

use super::workload::PAUSE_IMAGE;
use super::{Role, World};
use talm_wire::proto::common::{ContainerDriver, ContainerdInstance, ContainerdNamespace};

/// Which containerd and namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// The CRI containerd's `k8s.io` namespace (`--namespace cri`).
    Cri,
    /// The CRI containerd's `system` namespace (`--namespace system`).
    System,
    /// Talos's own in-memory containerd (`--namespace inmem`).
    InMem,
}

/// One image record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub name: String,
    pub digest: String,
    pub size: i64,
    /// Unix seconds.
    pub created: i64,
    pub labels: Vec<(String, String)>,
}

/// The store an instance names, or Talos's refusal.
pub fn store(i: &ContainerdInstance) -> Result<Store, Status> {
    let driver = ContainerDriver::try_from(i.driver)
        .map_err(|_| Status::invalid_argument(format!("invalid containerd driver {}", i.driver)))?;
    let ns = match ContainerdNamespace::try_from(i.namespace) {
        Ok(ns) if ns != ContainerdNamespace::NsUnknown => ns,
        _ => {
            let name = ContainerdNamespace::try_from(i.namespace)
                .map(|n| n.as_str_name().to_string())
                .unwrap_or_else(|_| i.namespace.to_string());
            return Err(Status::invalid_argument(format!(
                "invalid containerd namespace {name}"
            )));
        }
    };
    match (driver, ns) {
        (ContainerDriver::Containerd, ContainerdNamespace::NsCri) => Err(Status::invalid_argument(
            "cannot use CRI namespace with containerd driver",
        )),
        (ContainerDriver::Containerd, _) => Ok(Store::InMem),
        (ContainerDriver::Cri, ContainerdNamespace::NsCri) => Ok(Store::Cri),
        (ContainerDriver::Cri, _) => Ok(Store::System),
    }
}

/// `(reference, size in bytes, created)` of the images a node with `w` pulled into `store`.
fn pulled(w: &World, store: Store) -> Vec<(String, i64, i64)> {
    let k8s = &w.kubernetes;
    let kubelet = w.services.iter().any(|(s, _)| *s == "kubelet");
    match store {
        Store::InMem => vec![],
        Store::System if w.role == Role::Maintenance => vec![],
        Store::System => {
            let mut v = vec![(
                format!("ghcr.io/siderolabs/kubelet:{k8s}"),
                101_248_393,
                1_779_000_000,
            )];
            if w.role == Role::ControlPlane {
                v.insert(
                    0,
                    (super::ETCD_IMAGE.to_string(), 23_478_016, 1_778_400_000),
                );
            }
            v
        }
        Store::Cri if !kubelet => vec![],
        Store::Cri => {
            let mut v = vec![
                (
                    "ghcr.io/siderolabs/flannel:v0.28.7".to_string(),
                    11_871_402,
                    1_777_800_000,
                ),
                (
                    "ghcr.io/siderolabs/install-cni:v1.13.0".to_string(),
                    1_906_111,
                    1_776_900_000,
                ),
                (
                    format!("registry.k8s.io/kube-proxy:{k8s}"),
                    30_562_744,
                    1_779_000_000,
                ),
                (PAUSE_IMAGE.to_string(), 320_368, 1_749_000_000),
            ];
            if w.etcd {
                v.extend([
                    (
                        "registry.k8s.io/coredns/coredns:v1.14.4".to_string(),
                        21_913_040,
                        1_776_000_000,
                    ),
                    (
                        format!("registry.k8s.io/kube-apiserver:{k8s}"),
                        29_974_582,
                        1_779_000_000,
                    ),
                    (
                        format!("registry.k8s.io/kube-controller-manager:{k8s}"),
                        26_843_119,
                        1_779_000_000,
                    ),
                    (
                        format!("registry.k8s.io/kube-scheduler:{k8s}"),
                        20_876_344,
                        1_779_000_000,
                    ),
                ]);
            }
            v
        }
    }
}

/// The image records of `store`, as containerd lists them (by name).
pub fn list(w: &World, store: Store) -> Vec<Image> {
    let mut out = Vec::new();
    for (reference, size, created) in pulled(w, store) {
        let digest = format!(
            "sha256:{}",
            super::hex(0, &format!("{reference}#digest"), 64)
        );
        let id = format!(
            "sha256:{}",
            super::hex(0, &format!("{reference}#config"), 64)
        );
        let repo = reference
            .rsplit_once(':')
            .map_or(reference.as_str(), |(r, _)| r)
            .to_string();
        let mut labels = vec![];
        if store != Store::InMem {
            labels.push(("io.cri-containerd.image".to_string(), "managed".to_string()));
        }
        if reference == PAUSE_IMAGE {
            labels.push(("io.cri-containerd.pinned".to_string(), "pinned".to_string()));
        }
        for name in [reference.clone(), format!("{repo}@{digest}"), id] {
            out.push(Image {
                name,
                digest: digest.clone(),
                size,
                created,
                labels: labels.clone(),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::world;
    use super::*;

    fn inst(driver: ContainerDriver, ns: ContainerdNamespace) -> ContainerdInstance {
        ContainerdInstance {
            driver: driver as i32,
            namespace: ns as i32,
        }
    }

    #[test]
    fn stores_and_refusals_follow_talos() {
        assert_eq!(
            store(&inst(ContainerDriver::Cri, ContainerdNamespace::NsCri)).unwrap(),
            Store::Cri
        );
        assert_eq!(
            store(&inst(ContainerDriver::Cri, ContainerdNamespace::NsSystem)).unwrap(),
            Store::System
        );
        assert_eq!(
            store(&inst(
                ContainerDriver::Containerd,
                ContainerdNamespace::NsSystem
            ))
            .unwrap(),
            Store::InMem
        );
        let e = store(&inst(
            ContainerDriver::Containerd,
            ContainerdNamespace::NsCri,
        ))
        .unwrap_err();
        assert_eq!(
            e.message(),
            "cannot use CRI namespace with containerd driver"
        );
        let e = store(&inst(ContainerDriver::Cri, ContainerdNamespace::NsUnknown)).unwrap_err();
        assert_eq!(e.message(), "invalid containerd namespace NS_UNKNOWN");
    }

    #[test]
    fn control_planes_hold_the_control_plane_images() {
        let cp = list(&world(Role::ControlPlane, true, 60.0), Store::Cri);
        assert!(cp
            .iter()
            .any(|i| i.name.starts_with("registry.k8s.io/kube-apiserver:")));
        let pause: Vec<_> = cp
            .iter()
            .filter(|i| i.name.starts_with("registry.k8s.io/pause"))
            .collect();
        assert_eq!(pause.len(), 2, "tag and digest names");
        assert!(cp.iter().any(|i| i.name.starts_with("sha256:")));
        let worker = list(&world(Role::Worker, false, 60.0), Store::Cri);
        assert!(!worker.iter().any(|i| i.name.contains("kube-apiserver")));
        assert!(list(&world(Role::Maintenance, false, 60.0), Store::Cri).is_empty());
    }
}
