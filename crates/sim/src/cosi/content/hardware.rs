//! What the machine is, as Talos reads it from SMBIOS: its Processor, MemoryModule and
//! SystemInformation, those a QEMU (q35) virtual machine reports.

use serde_yaml_ng::Value;

use super::{number, omit, res, text, Ctx};
use crate::cosi::facts::Res;
use crate::node::load::CPUS;

/// The machine version QEMU reports.
const MACHINE: &str = "pc-q35-9.2";

/// SMBIOS's system UUID of the node (it stays across reboots and resets).
pub fn system_uuid(node_id: &str) -> String {
    crate::world::uuid(crate::world::mix(0, node_id), "system-uuid")
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    let owner = "hardware.SystemInfoController";
    let cpus = u64::from(CPUS);
    let mem_mib = crate::world::MEM_TOTAL_KB.div_ceil(1024 * 1024) * 1024;
    vec![
        res(
            "hardware",
            "Processors.hardware.talos.dev",
            "CPU-0",
            owner,
            omit(vec![
                ("socket", text("CPU 0")),
                ("manufacturer", text("QEMU")),
                ("productName", text(MACHINE)),
                ("maxSpeedMhz", number(2000)),
                ("bootSpeedMhz", number(2000)),
                ("status", number(65)),
                ("serialNumber", None),
                ("assetTag", None),
                ("partNumber", None),
                ("coreCount", number(cpus)),
                ("coreEnabled", number(cpus)),
                ("threadCount", number(cpus)),
            ]),
            1,
        ),
        res(
            "hardware",
            "MemoryModules.hardware.talos.dev",
            "DIMM-0",
            owner,
            omit(vec![
                ("sizeMiB", number(mem_mib)),
                ("deviceLocator", text("DIMM 0")),
                ("bankLocator", None),
                ("speed", None),
                ("manufacturer", text("QEMU")),
            ]),
            1,
        ),
        res(
            "hardware",
            "SystemInformations.hardware.talos.dev",
            "systeminformation",
            owner,
            omit(vec![
                ("manufacturer", text("QEMU")),
                ("productName", text("Standard PC (Q35 + ICH9, 2009)")),
                ("version", text(MACHINE)),
                ("serialnumber", None),
                ("uuid", Some(Value::from(system_uuid(&ctx.st.node_id)))),
                ("wakeUpType", text("Power Switch")),
            ]),
            1,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{hw, keys};
    use super::*;
    use crate::node::state::State;

    #[test]
    fn smbios_fields_keep_go_order_and_omit_the_empty() {
        let hw = hw();
        let st = State::new("v1.13.7", "n1");
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        assert_eq!(
            serde_yaml_ng::to_string(&r[0].spec).unwrap(),
            "socket: CPU 0\nmanufacturer: QEMU\nproductName: pc-q35-9.2\nmaxSpeedMhz: 2000\nbootSpeedMhz: 2000\nstatus: 65\ncoreCount: 4\ncoreEnabled: 4\nthreadCount: 4\n"
        );
        assert_eq!(
            serde_yaml_ng::to_string(&r[1].spec).unwrap(),
            "sizeMiB: 4096\ndeviceLocator: DIMM 0\nmanufacturer: QEMU\n"
        );
        assert_eq!(
            keys(&r[2].spec),
            [
                "manufacturer",
                "productName",
                "version",
                "uuid",
                "wakeUpType"
            ]
        );
        assert_eq!(r[2].spec["uuid"], Value::from(system_uuid("n1")));
    }
}
