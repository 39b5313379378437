//! `talm dashboard`'s Resources screen (F3) in a pseudo-terminal against simulated nodes: the
//! node's resource types, the filter, a type's resources, a resource's YAML, another node.

use std::time::Duration;

use crate::common::net;
use crate::common::sim::Nodes;
use crate::common::tty::{boxed, masked, masked_yaml, named, top, Tty, COLS, ROWS};

#[test]
fn dashboard_resources_screen_browses_types_resources_and_yaml() {
    let addrs = net::addrs::<2>();
    let [a, b] = &addrs;
    let _h = Nodes::start(&addrs, named("dash", &addrs));
    let mut tty = Tty::spawn(&format!("dashboard -n {a},{b} -i"));
    tty.wait_for(&["dash-1 Talos (v1.13.7)", "eth0: link up"]);
    let footer = format!("[{a} | {b}] --- [F1: Summary] --- [F2: Monitor] --- [Resources]");
    let footer = format!("{footer}{}", "─".repeat(COLS - footer.chars().count()));

    tty.keys("\u{1b}OR"); // F3: the node's resource types
    let screen = tty.wait_for(&[
        "Resource Types (Enter: select, /: filter)",
        "Diagnostics.runtime",
    ]);
    // The first rows of the node's types, sorted by type as Go sorts strings (capitals first).
    let types = [
        "TYPE                                            NAMESPACE    ALIASES",
        "APIServerConfigs.kubernetes.talos.dev           controlplane apiserverconfig, apisc, apiscs",
        "APIServiceConfigs.runtime.talos.dev             runtime      apiserviceconfig, apisc, apiscs",
        "AcquireConfigSpecs.v1alpha1.talos.dev           runtime      acquireconfigspec, acs",
        "AcquireConfigStatuses.v1alpha1.talos.dev        runtime      acquireconfigstatus, acs",
        "AddressSpecs.net.talos.dev                      network      addressspec, as",
        "AddressStatuses.net.talos.dev                   network      address, addresses, addressstatus, as",
        "AdjtimeStatuses.v1alpha1.talos.dev              runtime      adjtimestatus, as",
        "AdmissionControlConfigs.kubernetes.talos.dev    controlplane admissioncontrolconfig, acc, accs",
        "Affiliates.cluster.talos.dev                    cluster      affiliate",
        "ApiCertificates.secrets.talos.dev               secrets      apicertificate, ac, acs",
        "AuditPolicyConfigs.kubernetes.talos.dev         controlplane auditpolicyconfig, apc, apcs",
        "AuthorizationConfigs.kubernetes.talos.dev       controlplane authorizationconfig, ac, acs",
        "BlockDevices.block.talos.dev                    runtime      blockdevice, bd, bds",
        "BlockSymlinks.block.talos.dev                   runtime      blocksymlink, bs",
        "BootedEntries.talos.dev                         runtime      bootedentry, be, bes",
        "BootstrapManifestsConfigs.kubernetes.talos.dev  controlplane bootstrapmanifestsconfig, bmc, bmcs",
        "CPUStats.perf.talos.dev                         perf         cpustat, cpus",
        "CertSANs.secrets.talos.dev                      secrets      certsan, csan, csans",
        "ConfigStatuses.kubernetes.talos.dev             controlplane configstatus, cs",
        "ControllerManagerConfigs.kubernetes.talos.dev   controlplane controllermanagerconfig, cmc, cmcs",
        "DNSResolveCaches.net.talos.dev                  network      dnsresolvecach, dnsrc, dnsrcs",
        "DNSUpstreams.net.talos.dev                      network      dnsupstream, dnsu, dnsus",
        "DeviceConfigSpecs.net.talos.dev                 network      deviceconfigspec, dcs",
        "DevicesStatuses.runtime.talos.dev               runtime      devicesstatus, ds",
        "Diagnostics.runtime.talos.dev                   runtime      diagnostic",
    ];
    let bottom = format!("╚{}╝", "═".repeat(COLS - 2));
    let mut want = vec![
        "* dash-1 Talos (v1.13.7): uptime *, 4x2.44GHz, 3.8 GiB RAM, PROCS *, CPU *, RAM *"
            .to_string(),
        top(" Resource Types (Enter: select, /: filter) "),
    ];
    want.extend(types.iter().map(|t| boxed('║', t, '║')));
    want.extend([bottom.clone(), footer.clone()]);
    assert_eq!(masked(&screen), want);

    // `/` filters by type or alias (the box gives the keys to the filter line under it).
    tty.keys("/hostnames");
    let screen = tty.wait_for(&["filter: hostnames", "HostnameSpecs.net"]);
    let mut want = vec![
        "* dash-1 Talos (v1.13.7): uptime *, 4x2.44GHz, 3.8 GiB RAM, PROCS *, CPU *, RAM *"
            .to_string(),
        format!(
            "┌{0} Resource Types (Enter: select, /: filter) {1}┐",
            "─".repeat(27),
            "─".repeat(28)
        ),
    ];
    for t in [
        "TYPE                                                        NAMESPACE ALIASES",
        "HostnameSpecs.net.talos.dev                                 network   hostnamespec, hs",
        "HostnameStatuses.net.talos.dev                              network   hostname, hostnamestatus, hs",
    ] {
        want.push(boxed('│', t, '│'));
    }
    want.resize(ROWS - 3, boxed('│', "", '│'));
    want.extend([
        format!("└{}┘", "─".repeat(COLS - 2)),
        "filter: hostnames".into(),
        footer.clone(),
    ]);
    assert_eq!(masked(&screen), want);
    // Enter keeps the filter; ↓ (j) moves to the second type, Enter lists its resources.
    tty.keys("\r");
    tty.wait_until("the filter line closed", |s| !s.contains("filter: "));
    tty.keys("j\r");
    let screen = tty.wait_for(&["HostnameStatus (ns: network)", "Controller dash-1"]);
    // ID, VERSION, PHASE, OWNER and the type's print columns; the ID column takes the room.
    let header =
        "* dash-1 Talos (v1.13.7): uptime *, 4x2.44GHz, 3.8 GiB RAM, PROCS *, CPU *, RAM *";
    let list_title = top(" HostnameStatus (ns: network) — Enter: view YAML, Esc: back ");
    let list = |host: &str| {
        let mut want = vec![
            header.replace("dash-1", host),
            list_title.clone(),
            boxed('║', "ID                            VERSION PHASE   OWNER                            HOSTNAME DOMAINNAME", '║'),
            boxed('║', &format!("hostname                      1       running network.HostnameStatusController {host}"), '║'),
        ];
        want.resize(ROWS - 2, boxed('║', "", '║'));
        want.extend([bottom.clone(), footer.clone()]);
        want
    };
    assert_eq!(masked(&screen), list("dash-1"));

    // Enter: the resource's YAML, as COSI marshals it.
    let yaml = |host: &str| {
        let mut want = vec![
            header.replace("dash-1", host),
            top(" network / hostname (Esc: back) "),
        ];
        for l in [
            "metadata:",
            "  namespace: network",
            "  type: HostnameStatuses.net.talos.dev",
            "  id: hostname",
            "  version: 1",
            "  owner: network.HostnameStatusController",
            "  phase: running",
            "  created: <time>",
            "  updated: <time>",
            "spec:",
            &format!("  hostname: {host}"),
            "  domainname: \"\"",
        ] {
            want.push(format!("║{l}"));
        }
        want.resize(ROWS - 2, boxed('║', "", '║'));
        want.extend([bottom.clone(), footer.clone()]);
        want
    };
    // The YAML's rows without the box's right edge (the timestamps' mask shortens them).
    let yaml_rows = |screen: &[String]| -> Vec<String> {
        masked_yaml(screen)
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                if (2..14).contains(&i) {
                    l.trim_end_matches('║').trim_end().to_string()
                } else {
                    l
                }
            })
            .collect()
    };
    tty.keys("\r");
    let screen = tty.wait_for(&["network / hostname (Esc: back)", "hostname: dash-1"]);
    assert_eq!(yaml_rows(&screen), yaml("dash-1"));

    // Another node: the YAML gives way to the list, now of that node's resources.
    tty.keys("l");
    let screen = tty.wait_for(&["dash-2 Talos", "Controller dash-2"]);
    assert_eq!(masked(&screen), list("dash-2"));
    tty.keys("\r");
    let screen = tty.wait_for(&["network / hostname (Esc: back)", "hostname: dash-2"]);
    assert_eq!(yaml_rows(&screen), yaml("dash-2"));

    // Esc twice: the types again, unfiltered (another node clears the filter), the cursor
    // at the top; two rows down (j j) and Enter lists the third type.
    tty.keys("\u{1b}");
    tty.wait_for(&["HostnameStatus (ns: network)"]);
    tty.keys("\u{1b}");
    tty.wait_for(&[
        "Resource Types (Enter: select, /: filter)",
        "Diagnostics.runtime",
    ]);
    tty.keys("jj\r");
    let screen = tty.wait_for(&["AcquireConfigSpec (ns: runtime)"]);
    assert_eq!(
        masked(&screen)[1],
        top(" AcquireConfigSpec (ns: runtime) — Enter: view YAML, Esc: back ")
    );

    tty.keys("q");
    assert!(tty.wait(Duration::from_secs(5)), "{}", tty.transcript());
}
