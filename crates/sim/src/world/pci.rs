//! `/proc/bus/pci/devices`: the PCI functions of a simulated node — the chipset of a QEMU
//! i440FX machine, one virtio NIC per physical link at its bus path and one controller per disk
//! at the slot its `bus_path` names — in the kernel's text format (`drivers/pci/proc.c`).

use crate::node::hardware::{Disk, Hardware};

/// One PCI function as the kernel lists it.
struct Function {
    slot: u8,
    func: u8,
    vendor: u16,
    device: u16,
    irq: u8,
    /// The seven BARs: (start | region flags, size).
    bars: [(u64, u64); 7],
    driver: &'static str,
}

const NONE: (u64, u64) = (0, 0);
/// An I/O port BAR of `size` at `port` (flag bit 0: I/O space).
const fn io(port: u64, size: u64) -> (u64, u64) {
    (port | 0x1, size)
}
/// A 32-bit memory BAR.
const fn mem(at: u64, size: u64) -> (u64, u64) {
    (at, size)
}
/// A 64-bit prefetchable memory BAR (flags 0xc).
const fn mem64(at: u64, size: u64) -> (u64, u64) {
    (at | 0xc, size)
}

/// The PCI slot of the disk at `index` in the hardware's list (its `/dev/disk/by-path` link and
/// bus path name it too).
pub fn disk_slot(index: usize) -> u8 {
    5 + index as u8
}

/// The `(vendor, device, driver)` of the controller behind a disk of `transport`.
fn disk_controller(d: &Disk) -> (u16, u16, &'static str) {
    match d.transport.as_str() {
        "nvme" => (0x1b36, 0x0010, "nvme"),
        "sata" | "ata" => (0x8086, 0x2922, "ahci"),
        "usb" => (0x1b36, 0x000d, "xhci_hcd"),
        _ => (0x1af4, 0x1001, "virtio-pci"),
    }
}

/// `0000:00:03.0` → (slot 3, function 0).
fn slot_of(bus_path: &str) -> Option<(u8, u8)> {
    let (dev, func) = bus_path.rsplit(':').next()?.split_once('.')?;
    Some((u8::from_str_radix(dev, 16).ok()?, func.parse().ok()?))
}

fn functions(hw: &Hardware) -> Vec<Function> {
    let chipset = |slot, func, vendor, device, irq, bars, driver| Function {
        slot,
        func,
        vendor,
        device,
        irq,
        bars,
        driver,
    };
    let mut list = vec![
        chipset(0, 0, 0x8086, 0x1237, 0, [NONE; 7], ""),
        chipset(1, 0, 0x8086, 0x7000, 0, [NONE; 7], ""),
        chipset(
            1,
            1,
            0x8086,
            0x7010,
            0,
            [
                io(0x1f0, 8),
                io(0x3f6, 1),
                io(0x170, 8),
                io(0x376, 1),
                io(0xc0a0, 16),
                NONE,
                NONE,
            ],
            "ata_piix",
        ),
        chipset(1, 3, 0x8086, 0x7113, 9, [NONE; 7], "piix4_smbus"),
        chipset(
            2,
            0,
            0x1234,
            0x1111,
            0,
            [
                mem64(0xfd00_0000, 0x100_0000),
                NONE,
                mem(0xfebf_0000, 0x1000),
                NONE,
                NONE,
                NONE,
                mem(0xc0000, 0x20000),
            ],
            "bochs-drm",
        ),
    ];
    for (i, l) in hw.links.iter().enumerate() {
        let Some((slot, func)) = slot_of(&l.bus_path) else {
            continue;
        };
        let base = 0xfebf_1000 + 0x1000 * i as u64;
        list.push(Function {
            slot,
            func,
            vendor: 0x1af4,
            device: 0x1000,
            irq: 11,
            bars: [
                io(0xc000 + 0x20 * i as u64, 0x20),
                mem(base, 0x1000),
                NONE,
                NONE,
                mem64(0xfe00_0000 + 0x4000 * i as u64, 0x4000),
                NONE,
                mem(0xfeb8_0000, 0x40000),
            ],
            driver: "virtio-pci",
        });
    }
    for (i, d) in hw.disks.iter().enumerate() {
        if d.transport.is_empty() {
            continue;
        }
        let (vendor, device, driver) = disk_controller(d);
        list.push(Function {
            slot: disk_slot(i),
            func: 0,
            vendor,
            device,
            irq: 10,
            bars: [
                mem64(0xfe10_0000 + 0x4000 * i as u64, 0x4000),
                NONE,
                NONE,
                NONE,
                NONE,
                NONE,
                NONE,
            ],
            driver,
        });
    }
    list.sort_by_key(|f| (f.slot, f.func));
    list
}

/// The file's text: per function its bus and devfn, vendor and device, IRQ, the seven BAR
/// starts and sizes (`%16llx` each) and the bound driver.
pub fn devices(hw: &Hardware) -> String {
    let mut text = String::new();
    for f in functions(hw) {
        text += &format!(
            "00{:02x}\t{:04x}{:04x}\t{:x}",
            f.slot << 3 | f.func,
            f.vendor,
            f.device,
            f.irq
        );
        for (start, _) in f.bars {
            text += &format!("\t{start:16x}");
        }
        for (_, size) in f.bars {
            text += &format!("\t{size:16x}");
        }
        if !f.driver.is_empty() {
            text += "\t";
            text += f.driver;
        }
        text += "\n";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_machine_lists_chipset_nic_and_nvme() {
        let hw = Hardware::default_for("127.0.0.1".parse().unwrap());
        let text = devices(&hw);
        let heads: Vec<String> = text
            .lines()
            .map(|l| {
                let cells: Vec<&str> = l.split('\t').collect();
                format!(
                    "{} {} {} {}",
                    cells[0],
                    cells[1],
                    cells[2],
                    cells.get(17).unwrap_or(&"-")
                )
            })
            .collect();
        assert_eq!(
            heads,
            [
                "0000 80861237 0 -",
                "0008 80867000 0 -",
                "0009 80867010 0 ata_piix",
                "000b 80867113 9 piix4_smbus",
                "0010 12341111 0 bochs-drm",
                "0018 1af41000 b virtio-pci",
                "0028 1b360010 a nvme",
            ]
        );
        let nic = text.lines().nth(5).unwrap();
        assert_eq!(
            nic,
            "0018\t1af41000\tb\t            c001\t        febf1000\t               0\t               0\t        fe00000c\t               0\t        feb80000\t              20\t            1000\t               0\t               0\t            4000\t               0\t           40000\tvirtio-pci"
        );
    }
}
