//! The values keys of values-mapping.md through the binary, both presets, legacy (v1.11) and
//! multi-document (v1.12, v1.13) output: the §9 examples as YAML documents, every key's
//! landing place and its refusals (network.extraLinks refusals: presets_values_links.rs).

use crate::common::values::*;
use serde_yaml_ng::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/values/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Our render of the §9 node as the final config the example shows: the preset's
/// `nodeLabels $patch: delete` consumed, `allocate-node-cidrs` stored as a string, the
/// top-level keys Talos adds set, and comments aside.
fn as_final(mut ours: Vec<Value>) -> Vec<Value> {
    let first = ours[0].as_mapping_mut().unwrap();
    let mut full = serde_yaml_ng::Mapping::new();
    full.insert("version".into(), "v1alpha1".into());
    full.insert("debug".into(), false.into());
    full.insert("persist".into(), true.into());
    for (k, v) in first.iter() {
        full.insert(k.clone(), v.clone());
    }
    full["machine"]
        .as_mapping_mut()
        .unwrap()
        .remove("nodeLabels");
    full["cluster"]["controllerManager"]["extraArgs"]["allocate-node-cidrs"] = "true".into();
    ours[0] = Value::Mapping(full);
    ours
}

fn assert_docs_eq(name: &str, ours: &[Value], expected: &[Value]) {
    let show = |d: &[Value]| {
        d.iter()
            .map(|d| serde_yaml_ng::to_string(d).unwrap())
            .collect::<Vec<_>>()
            .join("---\n")
    };
    assert!(
        ours == expected,
        "{name} differs:\n--- ours\n{}\n--- expected\n{}",
        show(ours),
        show(expected)
    );
}

/// The §9 example's expected documents. Its lvm.conf text omits the `devices` block the
/// preset's golden file carries, so that one string is taken from the preset.
fn expected(file: &str, ours: &[Value]) -> Vec<Value> {
    let mut exp = docs(&fixture(file));
    let lvm = ours[0]["machine"]["files"][1]["content"].clone();
    exp[0]["machine"]["files"][1]["content"] = lvm;
    exp
}

#[test]
fn section_9_examples() {
    let d = project("cozystack", BOND_FACTS);
    let values = fixture("values-example.yaml");
    for talos in ["v1.12", "v1.13"] {
        let with_image = format!("{values}\nimage: ghcr.io/cozystack/cozystack/talos:v1.12.6\n");
        let ours = render(&d, "controlplane", talos, &with_image);
        schema_check(&ours);
        let ours = as_final(ours);
        assert_docs_eq(
            &format!("§9.1 at {talos}"),
            &ours,
            &expected("example-multidoc.yaml", &ours),
        );
    }
    let with_image = format!("{values}\nimage: ghcr.io/cozystack/cozystack/talos:v1.11.5\n");
    let ours = render(&d, "controlplane", "v1.11", &with_image);
    schema_check(&ours);
    let ours = as_final(ours);
    assert_docs_eq("§9.2", &ours, &expected("example-legacy.yaml", &ours));
}

#[test]
fn section_9_worker_has_no_vips_or_apiserver() {
    let d = project("cozystack", BOND_FACTS);
    let values = fixture("values-example.yaml");
    let w = render(&d, "worker", "v1.12", &values);
    schema_check(&w);
    assert!(kind(&w, "Layer2VIPConfig").is_empty());
    assert_eq!(kind(&w, "BondConfig").len(), 1);
    assert!(w[0]["cluster"]["apiServer"].is_null());
    let w = render(&d, "worker", "v1.11", &values);
    let ifaces = w[0]["machine"]["network"]["interfaces"]
        .as_sequence()
        .unwrap();
    assert_eq!(ifaces.len(), 2);
    assert!(ifaces.iter().all(|i| i["vip"].is_null()));
    assert!(ifaces[0]["vlans"][0]["vip"].is_null());
}

#[test]
fn extra_keys_land_in_v1alpha1_in_both_formats() {
    for preset in ["cozystack", "generic"] {
        let d = project(preset, GOLDEN_FACTS);
        let values = "advertisedSubnets: [192.168.1.0/24]\nextraKernelModules: [{name: br_netfilter, parameters: [a=1]}]\nextraKubeletExtraArgs: {serializeImagePulls: false}\nextraSysctls: {net.core.somaxconn: 65535, kernel.panic: 10.0, vm.swappiness: \"1\", net.ipv4.ip_forward: true}\nextraMachineFiles: [{path: /var/etc/a.conf, op: append, permissions: 0o600, content: x}]\n";
        let mut firsts = Vec::new();
        for talos in ["v1.11", "v1.12", "v1.13"] {
            let o = render(&d, "worker", talos, values);
            if talos != "v1.11" {
                schema_check(&o);
            }
            let m = &o[0]["machine"];
            let sysctls = m["sysctls"].as_mapping().unwrap();
            assert_eq!(m["sysctls"]["net.core.somaxconn"], y("\"65535\""));
            assert_eq!(m["sysctls"]["kernel.panic"], y("\"10\""));
            assert_eq!(m["sysctls"]["net.ipv4.ip_forward"], y("\"true\""));
            assert_eq!(m["sysctls"]["vm.swappiness"], y("\"1\""));
            assert!(
                sysctls.values().all(Value::is_string),
                "{preset}: {sysctls:?}"
            );
            let modules = m["kernel"]["modules"].as_sequence().unwrap();
            assert_eq!(
                modules.last().unwrap(),
                &y("{name: br_netfilter, parameters: [a=1]}")
            );
            assert_eq!(
                m["kubelet"]["extraConfig"]["serializeImagePulls"],
                y("false")
            );
            let files = m["files"].as_sequence().unwrap();
            assert_eq!(
                files.last().unwrap(),
                &y("{path: /var/etc/a.conf, op: append, permissions: 384, content: x}")
            );
            firsts.push(m.clone());
        }
        // The v1alpha1 fields are the same in every format (network aside).
        let strip = |m: &Value| {
            let mut m = m.clone();
            m.as_mapping_mut().unwrap().remove("network");
            m.as_mapping_mut().unwrap().remove("registries");
            m
        };
        assert_eq!(strip(&firsts[0]), strip(&firsts[1]), "{preset}");
        assert_eq!(firsts[1], firsts[2], "{preset}");
    }
}

#[test]
fn extra_key_refusals() {
    let d = project("generic", GOLDEN_FACTS);
    let base = "advertisedSubnets: [192.168.1.0/24]\n";
    for (values, needle) in [
        ("extraSysctls: {a.b: null}", "values.yaml: extraSysctls.a.b is null; give it a value or remove the key."),
        ("extraKubeletExtraArgs: {maxPods: ~}", "values.yaml: extraKubeletExtraArgs.maxPods is null; give it a value or remove the key."),
        ("extraApiServerArgs: {v: null}", "values.yaml: extraApiServerArgs.v is null; give it a value or remove the key."),
        ("extraKernelModules: [{parameters: [x]}]", "values.yaml: extraKernelModules[0]: name is required"),
        ("extraKernelModules: [{name: a}, {name: b, flags: 1}]", "values.yaml: extraKernelModules[1]: unknown key \"flags\""),
        ("extraMachineFiles: [{path: /a, op: delete}]", "values.yaml: extraMachineFiles[0]: op=\"delete\" must be create, append or overwrite"),
        ("extraMachineFiles: [{op: create}]", "values.yaml: extraMachineFiles[0]: path is required"),
        ("extraMachineFiles: [{path: /a, op: create, mode: 1}]", "values.yaml: extraMachineFiles[0]: unknown key \"mode\""),
        ("timeServers: [a, \"\"]", "values.yaml: timeServers[1]= must be a non-empty hostname or IP."),
        ("timeServers: [7]", "values.yaml: timeServers[0]=7 must be a non-empty hostname or IP."),
        // Not a panic: a key no template can read is named with where it is.
        ("odd:\n  ? [a, b]\n  : x", "values.yaml: odd has a key that is a list; the templates read keys that are text, numbers or booleans"),
    ] {
        for talos in ["v1.11", "v1.12"] {
            refused(&d, "controlplane", talos, &format!("{base}{values}\n"), needle);
        }
    }
}

#[test]
fn cozystack_drbd_override_and_collisions() {
    let d = project("cozystack", GOLDEN_FACTS);
    let base = "advertisedSubnets: [192.168.1.0/24]\n";
    let text = render_text(
        &d,
        "worker",
        "v1.12",
        &format!(
            "{base}extraSysctls: {{net.ipv4.tcp_tw_reuse: 2, net.core.somaxconn: \"1024\"}}\n"
        ),
    );
    assert_eq!(text.matches("net.ipv4.tcp_tw_reuse").count(), 1, "{text}");
    let o = docs(&text);
    let keys: Vec<&str> = o[0]["machine"]["sysctls"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(at("net.ipv4.tcp_tw_reuse") < at("net.ipv4.tcp_retries2"));
    assert_eq!(keys.last(), Some(&"net.core.somaxconn"));
    assert_eq!(
        o[0]["machine"]["sysctls"]["net.ipv4.tcp_tw_reuse"],
        y("\"2\"")
    );
    refused(&d, "worker", "v1.11", &format!("{base}extraSysctls: {{net.core.netdev_budget: 1}}\n"),
        "values.yaml: extraSysctls.net.core.netdev_budget collides with the cozystack preset's built-in machine.sysctls");
    refused(&d, "worker", "v1.12", &format!("{base}extraKubeletExtraArgs: {{maxPods: 10}}\n"),
        "values.yaml: extraKubeletExtraArgs.maxPods collides with the cozystack preset's built-in kubelet.extraConfig");
}

#[test]
fn time_servers_both_formats() {
    for preset in ["cozystack", "generic"] {
        let d = project(preset, GOLDEN_FACTS);
        let values = "advertisedSubnets: [192.168.1.0/24]\ntimeServers: [time.cloudflare.com, 192.0.2.123, time.cloudflare.com]\n";
        let o = render(&d, "worker", "v1.11", values);
        assert_eq!(
            o[0]["machine"]["time"],
            y("servers: [time.cloudflare.com, 192.0.2.123]")
        );
        let keys: Vec<&str> = o[0]["machine"]
            .as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap())
            .collect();
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert_eq!(at("time") + 1, at("network"), "{preset}: {keys:?}");
        for talos in ["v1.12", "v1.13"] {
            let o = render(&d, "worker", talos, values);
            schema_check(&o);
            assert!(o[0]["machine"]["time"].is_null());
            let ks = kinds(&o);
            let r = ks.iter().position(|k| k == "ResolverConfig").unwrap();
            assert_eq!(ks[r + 1], "TimeSyncConfig", "{preset}");
            assert_eq!(
                kind(&o, "TimeSyncConfig")[0],
                &y("{apiVersion: v1alpha1, kind: TimeSyncConfig, ntp: {servers: [time.cloudflare.com, 192.0.2.123]}}")
            );
        }
    }
}

#[test]
fn api_server_args() {
    for preset in ["cozystack", "generic"] {
        let d = project(preset, GOLDEN_FACTS);
        let values = "advertisedSubnets: [192.168.1.0/24]\nextraApiServerArgs: {max-requests-inflight: 2000, audit-log-path: \"-\", enable-admission-plugins: true}\n";
        for talos in ["v1.11", "v1.12", "v1.13"] {
            let o = render(&d, "controlplane", talos, values);
            assert_eq!(
                o[0]["cluster"]["apiServer"]["extraArgs"],
                y("{audit-log-path: \"-\", enable-admission-plugins: \"true\", max-requests-inflight: \"2000\"}"),
                "{preset} {talos}"
            );
            let w = render(&d, "worker", talos, values);
            assert!(w[0]["cluster"]["apiServer"].is_null());
        }
        let list = "advertisedSubnets: [192.168.1.0/24]\nextraApiServerArgs: {feature-gates: [A=true, B=false]}\n";
        let o = render(&d, "controlplane", "v1.13", list);
        schema_check(&o);
        assert_eq!(
            o[0]["cluster"]["apiServer"]["extraArgs"]["feature-gates"],
            y("[A=true, B=false]")
        );
        for talos in ["v1.11", "v1.12"] {
            refused(&d, "controlplane", talos, list, &format!(
                "values.yaml: extraApiServerArgs.feature-gates is a list; talosVersion {talos} accepts only string values (lists need v1.13)."));
        }
    }
    // cozystack: a user oidc-* key overrides the preset's in place; generic ignores oidcIssuerUrl.
    let d = project("cozystack", GOLDEN_FACTS);
    let values = "advertisedSubnets: [192.168.1.0/24]\noidcIssuerUrl: https://id.example.com\nextraApiServerArgs: {oidc-client-id: cozy, a-flag: x}\n";
    let text = render_text(&d, "controlplane", "v1.12", values);
    assert_eq!(text.matches("oidc-client-id").count(), 1);
    let args = &docs(&text)[0]["cluster"]["apiServer"]["extraArgs"];
    let keys: Vec<&str> = args
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "oidc-issuer-url",
            "oidc-client-id",
            "oidc-username-claim",
            "oidc-groups-claim",
            "a-flag"
        ]
    );
    assert_eq!(args["oidc-client-id"], y("cozy"));
    let g = project("generic", GOLDEN_FACTS);
    let o = render(
        &g,
        "controlplane",
        "v1.12",
        "advertisedSubnets: [192.168.1.0/24]\noidcIssuerUrl: https://id.example.com\n",
    );
    assert!(o[0]["cluster"]["apiServer"]["extraArgs"].is_null());
}

#[test]
fn cert_sans_both_presets() {
    let values = "advertisedSubnets: [192.168.1.0/24]\ncertSANs: [api.example.com, 192.0.2.5]\n";
    let d = project("cozystack", GOLDEN_FACTS);
    let o = render(&d, "controlplane", "v1.12", values);
    assert_eq!(
        o[0]["machine"]["certSANs"],
        y("[127.0.0.1, api.example.com, 192.0.2.5]")
    );
    assert_eq!(
        o[0]["cluster"]["apiServer"]["certSANs"],
        y("[127.0.0.1, api.example.com, 192.0.2.5]")
    );
    let g = project("generic", GOLDEN_FACTS);
    let o = render(&g, "controlplane", "v1.11", values);
    assert_eq!(
        o[0]["machine"]["certSANs"],
        y("[api.example.com, 192.0.2.5]")
    );
    assert_eq!(
        o[0]["cluster"]["apiServer"]["certSANs"],
        y("[api.example.com, 192.0.2.5]")
    );
}

#[test]
fn registry_mirrors_user_docker_wins() {
    let values = "advertisedSubnets: [192.168.1.0/24]\nregistryMirrors:\n  quay.io: {endpoints: [https://q.example.com], overridePath: true}\n  docker.io: {endpoints: [https://d.example.com, http://d2.example.com], skipFallback: true}\n";
    let d = project("cozystack", GOLDEN_FACTS);
    let o = render(&d, "worker", "v1.11", values);
    assert_eq!(
        o[0]["machine"]["registries"],
        y("mirrors: {docker.io: {endpoints: [https://d.example.com, http://d2.example.com], skipFallback: true}, quay.io: {endpoints: [https://q.example.com], overridePath: true}}")
    );
    let text = render_text(&d, "worker", "v1.11", values);
    assert!(!text.contains("mirror.gcr.io"));
    for talos in ["v1.12", "v1.13"] {
        let o = render(&d, "worker", talos, values);
        schema_check(&o);
        let m = kind(&o, "RegistryMirrorConfig");
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], &y("{apiVersion: v1alpha1, kind: RegistryMirrorConfig, name: docker.io, endpoints: [{url: https://d.example.com}, {url: http://d2.example.com}], skipFallback: true}"));
        assert_eq!(m[1], &y("{apiVersion: v1alpha1, kind: RegistryMirrorConfig, name: quay.io, endpoints: [{url: https://q.example.com, overridePath: true}]}"));
    }
    // generic: no fixed mirror; registries only when a key is set.
    let g = project("generic", GOLDEN_FACTS);
    let o = render(
        &g,
        "worker",
        "v1.11",
        "advertisedSubnets: [192.168.1.0/24]\n",
    );
    assert!(o[0]["machine"]["registries"].is_null());
    let o = render(&g, "worker", "v1.11", values);
    assert_eq!(
        o[0]["machine"]["registries"]["mirrors"]["docker.io"]["endpoints"],
        y("[https://d.example.com, http://d2.example.com]")
    );
    let o = render(&g, "worker", "v1.12", values);
    assert_eq!(kind(&o, "RegistryMirrorConfig").len(), 2);
    assert_eq!(
        kinds(&o)[..3],
        [
            "RegistryMirrorConfig",
            "RegistryMirrorConfig",
            "HostnameConfig"
        ]
    );
    for (v, needle) in [
        ("registryMirrors: {ghcr.io: {endpoints: [ftp://x]}}", "values.yaml: registryMirrors.ghcr.io.endpoints[0]=\"ftp://x\" must be an http:// or https:// URL."),
        ("registryMirrors: {ghcr.io: {endpoints: []}}", "values.yaml: registryMirrors.ghcr.io.endpoints must list at least one URL."),
        ("registryMirrors: {ghcr.io: {}}", "values.yaml: registryMirrors.ghcr.io.endpoints must list at least one URL."),
    ] {
        for talos in ["v1.11", "v1.12"] {
            refused(&g, "worker", talos, &format!("advertisedSubnets: [192.168.1.0/24]\n{v}\n"), needle);
        }
    }
}

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBdummyCA\n-----END CERTIFICATE-----\n";

#[test]
fn registry_tls_pem_or_base64() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(PEM);
    // ca given as base64, crt as PEM: legacy gets base64 of both, multi-doc plain PEM.
    let values = format!(
        "advertisedSubnets: [192.168.1.0/24]\nregistryTLS:\n  r.example.com:5000:\n    ca: {b64}\n    clientIdentity:\n      crt: {:?}\n    insecureSkipVerify: false\n",
        PEM
    );
    for preset in ["cozystack", "generic"] {
        let d = project(preset, GOLDEN_FACTS);
        let o = render(&d, "worker", "v1.11", &values);
        let tls = &o[0]["machine"]["registries"]["config"]["r.example.com:5000"]["tls"];
        assert_eq!(tls["ca"], Value::from(b64.clone()));
        assert_eq!(tls["clientIdentity"]["crt"], Value::from(b64.clone()));
        assert_eq!(tls["insecureSkipVerify"], y("false"));
        let o = render(&d, "worker", "v1.12", &values);
        schema_check(&o);
        let t = kind(&o, "RegistryTLSConfig");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["name"], y("r.example.com:5000"));
        assert_eq!(t[0]["ca"], Value::from(PEM));
        assert_eq!(t[0]["clientIdentity"]["crt"], Value::from(PEM));
        let ks = kinds(&o);
        let last_mirror = ks.iter().rposition(|k| k == "RegistryMirrorConfig");
        let tls_at = ks.iter().position(|k| k == "RegistryTLSConfig").unwrap();
        assert!(last_mirror.is_none_or(|m| m < tls_at));
        assert_eq!(ks[tls_at + 1], "HostnameConfig");
    }
    let d = project("generic", GOLDEN_FACTS);
    for (v, needle) in [
        (
            "registryTLS: {r.io: {ca: bm90IGEgcGVt}}",
            "values.yaml: registryTLS.r.io: ca is neither PEM nor base64 of PEM",
        ),
        (
            "registryTLS: {r.io: {verify: true}}",
            "values.yaml: registryTLS.r.io: unknown key \"verify\"",
        ),
        (
            "registryTLS: {r.io: {}}",
            "values.yaml: registryTLS.r.io: sets nothing",
        ),
        (
            "registryTLS: {r.io: {clientIdentity: {crt: xx}}}",
            "values.yaml: registryTLS.r.io: clientIdentity.crt is neither PEM nor base64 of PEM",
        ),
    ] {
        for talos in ["v1.11", "v1.12"] {
            refused(
                &d,
                "worker",
                talos,
                &format!("advertisedSubnets: [192.168.1.0/24]\n{v}\n"),
                needle,
            );
        }
    }
}

#[test]
fn schema_check_refuses_unknown_keys() {
    let bad = docs("machine: {type: worker}\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nbogus: 1\n");
    let r = std::panic::catch_unwind(|| schema_check(&bad));
    assert!(r.is_err(), "decode_check let an unknown key through");
}
