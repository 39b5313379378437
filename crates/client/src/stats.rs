//! The node statistics calls the dashboard polls (`SystemStat`, `CPUInfo`, `LoadAvg`,
//! `NetworkDeviceStats`, `DiskStats`, `Memory`): unary MachineService calls with `nodes` targeting, each answering one message
//! per node, checked for in-band errors like every other machine call.

use anyhow::Result;

use super::client::Client;
use super::errors::MACHINE;
use talm_wire::proto::machine;

impl Client {
    /// CPU time counters since boot, the boot time and process counts (`/proc/stat`).
    pub async fn system_stat(&self) -> Result<machine::SystemStat> {
        let mut c = self.machine();
        let r = self
            .call("SystemStat", MACHINE, c.system_stat(self.request((), true)))
            .await?;
        self.first("SystemStat", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })
    }

    /// One entry per logical CPU (`/proc/cpuinfo`).
    pub async fn cpu_info(&self) -> Result<Vec<machine::CpuInfo>> {
        let mut c = self.machine();
        let r = self
            .call("CPUInfo", MACHINE, c.cpu_info(self.request((), true)))
            .await?;
        Ok(self
            .first("CPUInfo", r.into_inner().messages, |m| m.metadata.as_ref())?
            .cpu_info)
    }

    /// The 1, 5 and 15 minute load averages.
    pub async fn load_avg(&self) -> Result<machine::LoadAvg> {
        let mut c = self.machine();
        let r = self
            .call("LoadAvg", MACHINE, c.load_avg(self.request((), true)))
            .await?;
        self.first("LoadAvg", r.into_inner().messages, |m| m.metadata.as_ref())
    }

    /// Each network device's counters since boot and their sum (`/proc/net/dev`).
    pub async fn network_device_stats(&self) -> Result<machine::NetworkDeviceStats> {
        let mut c = self.machine();
        let r = self
            .call(
                "NetworkDeviceStats",
                MACHINE,
                c.network_device_stats(self.request((), true)),
            )
            .await?;
        self.first("NetworkDeviceStats", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })
    }

    /// Each block device's I/O counters since boot and their sum (`/proc/diskstats`).
    pub async fn disk_stats(&self) -> Result<machine::DiskStats> {
        let mut c = self.machine();
        let r = self
            .call("DiskStats", MACHINE, c.disk_stats(self.request((), true)))
            .await?;
        self.first("DiskStats", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use talm_wire::proto::machine;

    /// Field numbers and types as Talos puts them on the wire.
    #[test]
    fn wire_layout_matches_talos() {
        // load1=2 (double), load15=4.
        let load = machine::LoadAvg {
            metadata: None,
            load1: 1.0,
            load5: 0.0,
            load15: 0.5,
        };
        assert_eq!(
            load.encode_to_vec(),
            [0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x21, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f]
        );
        // boot_time=2 (varint), cpu_total=3 { idle=4 (double) }, process_running=9.
        let stat = machine::SystemStat {
            boot_time: 5,
            cpu_total: Some(machine::CpuStat {
                idle: 2.0,
                ..Default::default()
            }),
            process_running: 3,
            ..Default::default()
        };
        assert_eq!(
            stat.encode_to_vec(),
            [0x10, 5, 0x1a, 9, 0x21, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x48, 3]
        );
        // meminfo=2 { memtotal=1, directmap1g=48 }.
        let mem = machine::Memory {
            metadata: None,
            meminfo: Some(machine::MemInfo {
                memtotal: 7,
                directmap1g: 1,
                ..Default::default()
            }),
        };
        assert_eq!(mem.encode_to_vec(), [0x12, 5, 0x08, 7, 0x80, 0x03, 1]);
        // cpu_info=2 { processor=1, cpu_mhz=8 (double) }.
        let cpus = machine::CpUsInfo {
            metadata: None,
            cpu_info: vec![machine::CpuInfo {
                processor: 1,
                cpu_mhz: 2.0,
                ..Default::default()
            }],
        };
        assert_eq!(
            cpus.encode_to_vec(),
            [0x12, 11, 0x08, 1, 0x41, 0, 0, 0, 0, 0, 0, 0, 0x40]
        );
        // total=2 { rx_bytes=2, tx_bytes=10 }, devices=3 { name=1 }.
        let net = machine::NetworkDeviceStats {
            metadata: None,
            total: Some(machine::NetDev {
                rx_bytes: 1,
                tx_bytes: 2,
                ..Default::default()
            }),
            devices: vec![machine::NetDev {
                name: "lo".into(),
                ..Default::default()
            }],
        };
        assert_eq!(
            net.encode_to_vec(),
            [0x12, 4, 0x10, 1, 0x50, 2, 0x1a, 4, 0x0a, 2, b'l', b'o']
        );
        // total=2 { read_sectors=4, write_sectors=8 }.
        let disk = machine::DiskStats {
            metadata: None,
            total: Some(machine::DiskStat {
                read_sectors: 3,
                write_sectors: 4,
                ..Default::default()
            }),
            devices: vec![],
        };
        assert_eq!(disk.encode_to_vec(), [0x12, 4, 0x20, 3, 0x40, 4]);
    }
}
