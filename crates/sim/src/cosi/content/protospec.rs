//! The `proto_spec` of the content types (`content::*`): each YAML spec encoded as the protobuf
//! message Talos marshals for its type, enums by Talos's numbers.

use prost::Message;
use serde_yaml_ng::Value;

use crate::cosi::protospec::{flag, net_ip, num, num32, text, texts};
use talm_wire::proto::common::{PemEncodedCertificate, PemEncodedCertificateAndKey};
use talm_wire::proto::talos::resource::definitions::{
    block, cluster as cl, enums, etcd, hardware as hw, k8s, runtime as rt, secrets, time, v1alpha1,
};

/// The PEM a `crt`/`key` field holds in base64 (the YAML), as the raw bytes protobuf carries.
fn pem(v: &Value, key: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text(v, key))
        .unwrap_or_default()
}

/// A `{crt, key}` mapping; nothing for `null`.
fn cert_and_key(v: Option<&Value>) -> Option<PemEncodedCertificateAndKey> {
    let v = v.filter(|v| v.is_mapping())?;
    Some(PemEncodedCertificateAndKey {
        crt: pem(v, "crt"),
        key: pem(v, "key"),
    })
}

fn machine_type(s: &str) -> i32 {
    (match s {
        "init" => enums::MachineType::TypeInit,
        "controlplane" => enums::MachineType::TypeControlPlane,
        "worker" => enums::MachineType::TypeWorker,
        _ => enums::MachineType::TypeUnknown,
    }) as i32
}

fn stage(s: &str) -> i32 {
    use enums::RuntimeMachineStage as S;
    (match s {
        "booting" => S::MachineStageBooting,
        "installing" => S::MachineStageInstalling,
        "maintenance" => S::MachineStageMaintenance,
        "running" => S::MachineStageRunning,
        "rebooting" => S::MachineStageRebooting,
        "shutting down" => S::MachineStageShuttingDown,
        "resetting" => S::MachineStageResetting,
        "upgrading" => S::MachineStageUpgrading,
        _ => S::MachineStageUnknown,
    }) as i32
}

fn control_plane(v: &Value) -> Option<cl::ControlPlane> {
    v.get("controlPlane").map(|cp| cl::ControlPlane {
        api_server_port: num(cp, "port") as i64,
    })
}

fn ips(v: &Value) -> Vec<talm_wire::proto::common::NetIp> {
    texts(v, "addresses")
        .iter()
        .filter_map(|a| net_ip(a))
        .collect()
}

/// A Go `map[string]string`.
fn string_map(v: &Value, key: &str) -> std::collections::HashMap<String, String> {
    v.get(key)
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn extra_args(v: &Value) -> std::collections::HashMap<String, k8s::ArgValues> {
    v.get("extraArgs")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .filter_map(|(k, a)| {
                    Some((
                        k.as_str()?.to_string(),
                        k8s::ArgValues {
                            values: texts(a, "values"),
                        },
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn extra_volumes(v: &Value) -> Vec<k8s::ExtraVolume> {
    v.get("extraVolumes")
        .and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .map(|e| k8s::ExtraVolume {
                    name: text(e, "name"),
                    host_path: text(e, "hostPath"),
                    mount_path: text(e, "mountPath"),
                    read_only: flag(e, "readonly"),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn resources(v: &Value) -> Option<k8s::Resources> {
    let r = v.get("resources")?;
    Some(k8s::Resources {
        requests: string_map(r, "requests"),
        limits: string_map(r, "limits"),
    })
}

/// A YAML value as `google.protobuf.Value`.
fn pb_value(v: &Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match v {
        Value::Null | Value::Tagged(_) => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Sequence(s) => Kind::ListValue(prost_types::ListValue {
            values: s.iter().map(pb_value).collect(),
        }),
        Value::Mapping(_) => Kind::StructValue(pb_struct(v)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn pb_struct(v: &Value) -> prost_types::Struct {
    prost_types::Struct {
        fields: v
            .as_mapping()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_string(), pb_value(v))))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn accepted(v: &Value) -> Vec<PemEncodedCertificate> {
    v.get("acceptedCAs")
        .and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .map(|c| PemEncodedCertificate { crt: pem(c, "crt") })
                .collect()
        })
        .unwrap_or_default()
}

/// A Go `*url.URL` (written as its struct) as Talos carries it: the whole URL.
fn url(v: &Value, key: &str) -> Option<talm_wire::proto::common::Url> {
    let u = v.get(key)?;
    Some(talm_wire::proto::common::Url {
        full_path: format!(
            "{}://{}{}",
            text(u, "scheme"),
            text(u, "host"),
            text(u, "path")
        ),
    })
}

fn volume_status(v: &Value) -> block::VolumeStatusSpec {
    use enums::{BlockFilesystemType as Fs, BlockVolumePhase as Phase, BlockVolumeType as Type};
    let phase = |p: &str| {
        (match p {
            "failed" => Phase::VolumePhaseFailed,
            "missing" => Phase::VolumePhaseMissing,
            "located" => Phase::VolumePhaseLocated,
            "provisioned" => Phase::VolumePhaseProvisioned,
            "prepared" => Phase::VolumePhasePrepared,
            "ready" => Phase::VolumePhaseReady,
            "closed" => Phase::VolumePhaseClosed,
            _ => Phase::VolumePhaseWaiting,
        }) as i32
    };
    let ty = match text(v, "type").as_str() {
        "disk" => Type::VolumeTypeDisk,
        "tmpfs" => Type::VolumeTypeTmpfs,
        "directory" => Type::VolumeTypeDirectory,
        "symlink" => Type::VolumeTypeSymlink,
        "overlay" => Type::VolumeTypeOverlay,
        "external" => Type::VolumeTypeExternal,
        _ => Type::VolumeTypePartition,
    };
    let fs = match text(v, "filesystem").as_str() {
        "xfs" => Fs::FilesystemTypeXfs,
        "vfat" => Fs::FilesystemTypeVfat,
        "ext4" => Fs::FilesystemTypeExt4,
        "iso9660" => Fs::FilesystemTypeIso9660,
        "swap" => Fs::FilesystemTypeSwap,
        "virtiofs" => Fs::FilesystemTypeVirtiofs,
        _ => Fs::FilesystemTypeNone,
    };
    block::VolumeStatusSpec {
        phase: phase(&text(v, "phase")),
        location: text(v, "location"),
        error_message: text(v, "errorMessage"),
        uuid: text(v, "uuid"),
        partition_uuid: text(v, "partitionUUID"),
        pre_fail_phase: phase(&text(v, "preFailPhase")),
        parent_location: text(v, "parentLocation"),
        partition_index: num(v, "partitionIndex") as i64,
        size: num(v, "size"),
        filesystem: fs as i32,
        mount_location: text(v, "mountLocation"),
        pretty_size: text(v, "prettySize"),
        mount_spec: v.get("mountSpec").map(|m| block::MountSpec {
            target_path: text(m, "targetPath"),
            selinux_label: text(m, "selinuxLabel"),
            project_quota_support: flag(m, "projectQuotaSupport"),
            parent_id: text(m, "parentId"),
            file_mode: num32(m, "fileMode"),
            uid: num(m, "uid") as i64,
            gid: num(m, "gid") as i64,
            recursive_relabel: flag(m, "recursiveRelabel"),
        }),
        r#type: ty as i32,
        symlink_spec: v.get("symlink").map(|l| block::SymlinkProvisioningSpec {
            symlink_target_path: text(l, "symlinkTargetPath"),
            force: flag(l, "force"),
        }),
        parent_id: text(v, "parentID"),
    }
}

/// The protobuf spec of a content type of the Kubernetes, volume and extension kinds.
fn encode_more(ty: &str, v: &Value) -> Option<Vec<u8>> {
    let b = match ty {
        "StaticPods.kubernetes.talos.dev" => k8s::StaticPodSpec {
            pod: Some(pb_struct(v)),
        }
        .encode_to_vec(),
        "StaticPodStatuses.kubernetes.talos.dev" => k8s::StaticPodStatusSpec {
            pod_status: Some(pb_struct(v)),
        }
        .encode_to_vec(),
        "KubeletSpecs.kubernetes.talos.dev" => k8s::KubeletSpecSpec {
            image: text(v, "image"),
            args: texts(v, "args"),
            extra_mounts: v
                .get("extraMounts")
                .and_then(Value::as_sequence)
                .map(|s| {
                    s.iter()
                        .map(|m| k8s::Mount {
                            destination: text(m, "destination"),
                            r#type: text(m, "type"),
                            source: text(m, "source"),
                            options: texts(m, "options"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            expected_nodename: text(v, "expectedNodename"),
            config: v.get("config").map(pb_struct),
            credential_provider_config: v.get("credentialProviderConfig").map(pb_struct),
        }
        .encode_to_vec(),
        "Manifests.kubernetes.talos.dev" => k8s::ManifestSpec {
            items: v
                .as_sequence()
                .map(|s| {
                    s.iter()
                        .map(|o| k8s::SingleManifest {
                            object: Some(pb_struct(o)),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
        .encode_to_vec(),
        "VolumeStatuses.block.talos.dev" => volume_status(v).encode_to_vec(),
        "ExtensionStatuses.runtime.talos.dev" => {
            let m = v.get("metadata").cloned().unwrap_or_default();
            rt::ExtensionStatusSpec {
                image: text(v, "image"),
                metadata: Some(rt::ExtensionMetadata {
                    name: text(&m, "name"),
                    version: text(&m, "version"),
                    author: text(&m, "author"),
                    description: text(&m, "description"),
                    compatibility: m.get("compatibility").map(|c| rt::ExtensionCompatibility {
                        talos: c.get("talos").map(|t| rt::ExtensionConstraint {
                            version: text(t, "version"),
                        }),
                    }),
                    extra_info: text(&m, "extraInfo"),
                }),
            }
            .encode_to_vec()
        }
        "KubernetesRootSecrets.secrets.talos.dev" => secrets::KubernetesRootSpec {
            name: text(v, "name"),
            endpoint: url(v, "endpoint"),
            local_endpoint: url(v, "local_endpoint"),
            cert_sa_ns: texts(v, "certSANs"),
            dns_domain: text(v, "dnsDomain"),
            issuing_ca: cert_and_key(v.get("issuingCA")),
            service_account: v
                .get("serviceAccount")
                .filter(|k| k.is_mapping())
                .map(|k| talm_wire::proto::common::PemEncodedKey { key: pem(k, "key") }),
            aggregator_ca: cert_and_key(v.get("aggregatorCA")),
            aescbc_encryption_secret: text(v, "aesCBCEncryptionSecret"),
            bootstrap_token_id: text(v, "bootstrapTokenID"),
            bootstrap_token_secret: text(v, "bootstrapTokenSecret"),
            secretbox_encryption_secret: text(v, "secretboxEncryptionSecret"),
            api_server_ips: texts(v, "apiServerIPs")
                .iter()
                .filter_map(|a| net_ip(a))
                .collect(),
            accepted_c_as: accepted(v),
        }
        .encode_to_vec(),
        "ApiCertificates.secrets.talos.dev" => secrets::ApiCertsSpec {
            client: cert_and_key(v.get("client")),
            server: cert_and_key(v.get("server")),
            accepted_c_as: accepted(v),
            skip_verifying_client_cert: flag(v, "skipVerifyingClientCert"),
        }
        .encode_to_vec(),
        _ => return None,
    };
    Some(b)
}

/// The protobuf spec of a content type, `None` for another type.
pub fn encode(ty: &str, v: &Value) -> Option<Vec<u8>> {
    let b = match ty {
        "MachineStatuses.runtime.talos.dev" => {
            let status = v.get("status").cloned().unwrap_or_default();
            rt::MachineStatusSpec {
                stage: stage(&text(v, "stage")),
                status: Some(rt::MachineStatusStatus {
                    ready: flag(&status, "ready"),
                    unmet_conditions: status
                        .get("unmetConditions")
                        .and_then(Value::as_sequence)
                        .map(|s| {
                            s.iter()
                                .map(|c| rt::UnmetCondition {
                                    name: text(c, "name"),
                                    reason: text(c, "reason"),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                }),
            }
            .encode_to_vec()
        }
        "SecurityStates.talos.dev" => rt::SecurityStateSpec {
            secure_boot: flag(v, "secureBoot"),
            uki_signing_key_fingerprint: text(v, "ukiSigningKeyFingerprint"),
            pcr_signing_key_fingerprint: text(v, "pcrSigningKeyFingerprint"),
            se_linux_state: match text(v, "selinuxState").as_str() {
                "enabled, permissive" => 1,
                "enabled, enforcing" => 2,
                _ => 0,
            },
            booted_with_uki: flag(v, "bootedWithUKI"),
            fips_state: match text(v, "fipsState").as_str() {
                "enabled" => 1,
                "enabled, strict" => 2,
                _ => 0,
            },
            module_signature_enforced: flag(v, "moduleSignatureEnforced"),
        }
        .encode_to_vec(),
        "Versions.runtime.talos.dev" => rt::VersionSpec {
            version: text(v, "version"),
            name: text(v, "name"),
        }
        .encode_to_vec(),
        "MountStatuses.runtime.talos.dev" => rt::MountStatusSpec {
            source: text(v, "source"),
            target: text(v, "target"),
            filesystem_type: text(v, "filesystemType"),
            options: texts(v, "options"),
            encrypted: flag(v, "encrypted"),
            encryption_providers: texts(v, "encryptionProviders"),
        }
        .encode_to_vec(),
        "Services.v1alpha1.talos.dev" => v1alpha1::ServiceSpec {
            running: flag(v, "running"),
            healthy: flag(v, "healthy"),
            unknown: flag(v, "unknown"),
        }
        .encode_to_vec(),
        "TimeStatuses.v1alpha1.talos.dev" => time::StatusSpec {
            synced: flag(v, "synced"),
            epoch: num(v, "epoch") as i64,
            sync_disabled: flag(v, "syncDisabled"),
        }
        .encode_to_vec(),
        "EtcdMembers.etcd.talos.dev" => etcd::MemberSpec {
            member_id: text(v, "memberID"),
        }
        .encode_to_vec(),
        "Processors.hardware.talos.dev" => hw::ProcessorSpec {
            socket: text(v, "socket"),
            manufacturer: text(v, "manufacturer"),
            product_name: text(v, "productName"),
            max_speed: num32(v, "maxSpeedMhz"),
            boot_speed: num32(v, "bootSpeedMhz"),
            status: num32(v, "status"),
            serial_number: text(v, "serialNumber"),
            asset_tag: text(v, "assetTag"),
            part_number: text(v, "partNumber"),
            core_count: num32(v, "coreCount"),
            core_enabled: num32(v, "coreEnabled"),
            thread_count: num32(v, "threadCount"),
        }
        .encode_to_vec(),
        "MemoryModules.hardware.talos.dev" => hw::MemoryModuleSpec {
            size: num32(v, "sizeMiB"),
            device_locator: text(v, "deviceLocator"),
            bank_locator: text(v, "bankLocator"),
            speed: num32(v, "speed"),
            manufacturer: text(v, "manufacturer"),
            serial_number: text(v, "serialNumber"),
            asset_tag: text(v, "assetTag"),
            product_name: text(v, "productName"),
        }
        .encode_to_vec(),
        "SystemInformations.hardware.talos.dev" => hw::SystemInformationSpec {
            manufacturer: text(v, "manufacturer"),
            product_name: text(v, "productName"),
            version: text(v, "version"),
            serial_number: text(v, "serialnumber"),
            uuid: text(v, "uuid"),
            wake_up_type: text(v, "wakeUpType"),
            sku_number: text(v, "skuNumber"),
        }
        .encode_to_vec(),
        "Identities.cluster.talos.dev" => cl::IdentitySpec {
            node_id: text(v, "nodeId"),
        }
        .encode_to_vec(),
        "Affiliates.cluster.talos.dev" => cl::AffiliateSpec {
            node_id: text(v, "nodeId"),
            addresses: ips(v),
            hostname: text(v, "hostname"),
            nodename: text(v, "nodename"),
            operating_system: text(v, "operatingSystem"),
            machine_type: machine_type(&text(v, "machineType")),
            control_plane: control_plane(v),
        }
        .encode_to_vec(),
        "Members.cluster.talos.dev" => cl::MemberSpec {
            node_id: text(v, "nodeId"),
            addresses: ips(v),
            hostname: text(v, "hostname"),
            machine_type: machine_type(&text(v, "machineType")),
            operating_system: text(v, "operatingSystem"),
            control_plane: control_plane(v),
        }
        .encode_to_vec(),
        "Nodenames.kubernetes.talos.dev" => k8s::NodenameSpec {
            nodename: text(v, "nodename"),
            hostname_version: text(v, "hostnameVersion"),
            skip_node_registration: flag(v, "skipNodeRegistration"),
        }
        .encode_to_vec(),
        "APIServerConfigs.kubernetes.talos.dev" => k8s::ApiServerConfigSpec {
            image: text(v, "image"),
            cloud_provider: text(v, "cloudProvider"),
            control_plane_endpoint: text(v, "controlPlaneEndpoint"),
            etcd_servers: texts(v, "etcdServers"),
            local_port: num(v, "localPort") as i64,
            service_cid_rs: texts(v, "serviceCIDR"),
            extra_volumes: extra_volumes(v),
            environment_variables: string_map(v, "environmentVariables"),
            advertised_address: text(v, "advertisedAddress"),
            resources: resources(v),
            extra_args: extra_args(v),
        }
        .encode_to_vec(),
        "ControllerManagerConfigs.kubernetes.talos.dev" => k8s::ControllerManagerConfigSpec {
            enabled: flag(v, "enabled"),
            image: text(v, "image"),
            cloud_provider: text(v, "cloudProvider"),
            pod_cid_rs: texts(v, "podCIDRs"),
            service_cid_rs: texts(v, "serviceCIDRs"),
            extra_volumes: extra_volumes(v),
            environment_variables: string_map(v, "environmentVariables"),
            resources: resources(v),
            extra_args: extra_args(v),
        }
        .encode_to_vec(),
        "SchedulerConfigs.kubernetes.talos.dev" => k8s::SchedulerConfigSpec {
            enabled: flag(v, "enabled"),
            image: text(v, "image"),
            extra_volumes: extra_volumes(v),
            environment_variables: string_map(v, "environmentVariables"),
            resources: resources(v),
            config: v.get("config").map(pb_struct),
            extra_args: extra_args(v),
        }
        .encode_to_vec(),
        "OSRootSecrets.secrets.talos.dev" => secrets::OsRootSpec {
            issuing_ca: cert_and_key(v.get("issuingCA")),
            cert_sani_ps: texts(v, "certSANIPs")
                .iter()
                .filter_map(|a| net_ip(a))
                .collect(),
            cert_sandns_names: texts(v, "certSANDNSNames"),
            token: text(v, "token"),
            accepted_c_as: accepted(v),
        }
        .encode_to_vec(),
        "EtcdRootSecrets.secrets.talos.dev" => secrets::EtcdRootSpec {
            etcd_ca: cert_and_key(v.get("etcdCA")),
        }
        .encode_to_vec(),
        _ => return encode_more(ty, v),
    };
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_and_machine_types_carry_talos_numbers() {
        let v: Value = serde_yaml_ng::from_str(
            "stage: running\nstatus: {ready: false, unmetConditions: [{name: services, reason: etcd not running}]}",
        )
        .unwrap();
        let b = encode("MachineStatuses.runtime.talos.dev", &v).unwrap();
        let m = rt::MachineStatusSpec::decode(b.as_slice()).unwrap();
        assert_eq!(m.stage, 4);
        assert_eq!(
            m.status.unwrap().unmet_conditions[0].reason,
            "etcd not running"
        );
        let v: Value = serde_yaml_ng::from_str(
            "nodeId: x\naddresses: [10.0.0.1]\nhostname: h\nmachineType: worker\noperatingSystem: Talos (v1.13.7)",
        )
        .unwrap();
        let m = cl::MemberSpec::decode(encode("Members.cluster.talos.dev", &v).unwrap().as_slice())
            .unwrap();
        assert_eq!(
            (m.machine_type, m.addresses[0].ip.clone()),
            (3, vec![10, 0, 0, 1])
        );
        assert!(m.control_plane.is_none());
        assert_eq!(encode("Unknown.talos.dev", &v), None);
    }

    #[test]
    fn volumes_and_roots_carry_talos_numbers() {
        let v: Value = serde_yaml_ng::from_str(
            "phase: ready\ntype: directory\nmountSpec: {targetPath: etcd, selinuxLabel: x, projectQuotaSupport: false, parentId: /var/lib, fileMode: 448, uid: 60, gid: 60}",
        )
        .unwrap();
        let m = block::VolumeStatusSpec::decode(
            encode("VolumeStatuses.block.talos.dev", &v)
                .unwrap()
                .as_slice(),
        )
        .unwrap();
        assert_eq!((m.phase, m.r#type), (6, 3));
        assert_eq!(m.mount_spec.unwrap().file_mode, 0o700);
        let v: Value = serde_yaml_ng::from_str(
            "name: c\nendpoint: {scheme: https, host: '10.0.0.1:6443', path: ''}\napiServerIPs: [10.96.0.1]\nacceptedCAs: [{crt: Q0E=}]",
        )
        .unwrap();
        let m = secrets::KubernetesRootSpec::decode(
            encode("KubernetesRootSecrets.secrets.talos.dev", &v)
                .unwrap()
                .as_slice(),
        )
        .unwrap();
        assert_eq!(m.endpoint.unwrap().full_path, "https://10.0.0.1:6443");
        assert_eq!(m.api_server_ips[0].ip, [10, 96, 0, 1]);
        assert_eq!(m.accepted_c_as[0].crt, b"CA");
        let pod: Value = serde_yaml_ng::from_str("kind: Pod\nspec: {priority: 2e+09}").unwrap();
        let m = k8s::StaticPodSpec::decode(
            encode("StaticPods.kubernetes.talos.dev", &pod)
                .unwrap()
                .as_slice(),
        )
        .unwrap();
        assert_eq!(m.pod.unwrap().fields.len(), 2);
    }
}
