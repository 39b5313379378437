//! Generated Talos API messages (from `proto/`, compiled by build.rs).

/// The `common` package of the Talos API.
pub mod common {
    tonic::include_proto!("common");
}

/// The `machine` package: MachineService and its messages.
pub mod machine {
    tonic::include_proto!("machine");
}

/// The `cluster` package: ClusterService (the server-side health check).
pub mod cluster {
    tonic::include_proto!("cluster");
}

/// The `storage` package: StorageService (BlockDeviceWipe).
pub mod storage {
    tonic::include_proto!("storage");
}

/// The `time` package: TimeService.
pub mod time {
    tonic::include_proto!("time");
}

/// The `inspect` package: InspectService (the controller runtime's dependency graph).
pub mod inspect {
    tonic::include_proto!("inspect");
}

/// COSI: resources and the `cosi.resource.State` service.
pub mod cosi {
    pub mod resource {
        tonic::include_proto!("cosi.resource");

        /// Specs of the `meta` namespace resources (definitions, namespaces).
        pub mod meta {
            tonic::include_proto!("cosi.resource.meta");
        }
    }
}

/// Talos resource specs as `proto_spec` carries them (`talos.resource.definitions.*`).
pub mod talos {
    pub mod resource {
        pub mod definitions {
            /// Enums shared by the specs.
            pub mod enums {
                tonic::include_proto!("talos.resource.definitions.enums");
            }
            /// Disks and the system disk.
            pub mod block {
                tonic::include_proto!("talos.resource.definitions.block");
            }
            /// META keys, machine status, security state, version.
            pub mod runtime {
                tonic::include_proto!("talos.resource.definitions.runtime");
            }
            /// Links, addresses, routes, hostname, node addresses, resolvers.
            pub mod network {
                tonic::include_proto!("talos.resource.definitions.network");
            }
            /// Services.
            pub mod v1alpha1 {
                tonic::include_proto!("talos.resource.definitions.v1alpha1");
            }
            /// The time sync status.
            pub mod time {
                tonic::include_proto!("talos.resource.definitions.time");
            }
            /// The local etcd member.
            pub mod etcd {
                tonic::include_proto!("talos.resource.definitions.etcd");
            }
            /// SMBIOS processors, memory modules, system information.
            pub mod hardware {
                tonic::include_proto!("talos.resource.definitions.hardware");
            }
            /// Identity, affiliates, members.
            pub mod cluster {
                tonic::include_proto!("talos.resource.definitions.cluster");
            }
            /// Node name and control plane configs.
            pub mod k8s {
                tonic::include_proto!("talos.resource.definitions.k8s");
            }
            /// The OS and etcd roots.
            pub mod secrets {
                tonic::include_proto!("talos.resource.definitions.secrets");
            }
        }
    }
}

/// Config resource specs (`resource.config`): machine config and machine type.
pub mod resource {
    pub mod config {
        tonic::include_proto!("resource.config");
    }
}

/// `google.rpc` messages Talos embeds in its metadata.
pub mod google {
    pub mod rpc {
        tonic::include_proto!("google.rpc");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Field numbers and types as Talos puts them on the wire.
    #[test]
    fn wire_layout_matches_talos() {
        let req = machine::ApplyConfigurationRequest {
            data: b"x".to_vec(),
            mode: machine::apply_configuration_request::Mode::Try as i32,
            dry_run: true,
            try_mode_timeout: Some(prost_types::Duration {
                seconds: 60,
                nanos: 0,
            }),
        };
        // data=1 (bytes), mode=4 (varint), dry_run=5 (varint), try_mode_timeout=6 (message).
        assert_eq!(
            req.encode_to_vec(),
            [0x0a, 1, b'x', 0x20, 4, 0x28, 1, 0x32, 2, 0x08, 60]
        );
        let reset = machine::ResetRequest {
            graceful: true,
            reboot: false,
            system_partitions_to_wipe: vec![machine::ResetPartitionSpec {
                label: "STATE".into(),
                wipe: true,
            }],
            user_disks_to_wipe: vec![],
            mode: machine::reset_request::WipeMode::SystemDisk as i32,
        };
        assert_eq!(
            reset.encode_to_vec(),
            [0x08, 1, 0x1a, 9, 0x0a, 5, b'S', b'T', b'A', b'T', b'E', 0x10, 1, 0x28, 1]
        );
        let res = cosi::resource::Resource {
            metadata: Some(cosi::resource::Metadata {
                namespace: "network".into(),
                id: "eth0".into(),
                phase: "running".into(),
                ..Default::default()
            }),
            spec: Some(cosi::resource::Spec {
                proto_spec: vec![],
                yaml_spec: "mtu: 1500\n".into(),
            }),
        };
        let bytes = res.encode_to_vec();
        let back = cosi::resource::Resource::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, res);
        // metadata=1 { namespace=1, id=3, phase=6 }, spec=2 { yaml_spec=2 }.
        assert_eq!(&bytes[..4], &[0x0a, 24, 0x0a, 7]);
        assert!(
            bytes.windows(2).any(|w| w == [0x1a, 4]) && bytes.windows(2).any(|w| w == [0x32, 7])
        );
        assert!(bytes.ends_with(&[
            0x12, 12, 0x12, 10, b'm', b't', b'u', b':', b' ', b'1', b'5', b'0', b'0', b'\n'
        ]));
        let watch = cosi::resource::WatchRequest {
            api_version: 1,
            id: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(watch.encode_to_vec(), [0x1a, 1, b'x', 0x28, 1]);
        let data = common::Data {
            metadata: None,
            bytes: b"kube".to_vec(),
        };
        assert_eq!(data.encode_to_vec(), [0x12, 4, b'k', b'u', b'b', b'e']);
    }
}
