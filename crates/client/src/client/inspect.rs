//! The node-inspection calls of the client: containers and their stats, processes, memory,
//! mounts, sockets, files (read, list, copy as a tar.gz, disk usage), time, images and the
//! controller runtime's dependency graph. Unary calls check in-band errors like the other
//! machine calls; file streams hand each chunk or entry to the caller as it arrives, so large
//! reads and copies are not held in memory.

use anyhow::Result;
use tonic::Streaming;

use super::Client;
use crate::errors::MACHINE;
use crate::transport::Checked;
use talm_wire::proto::common;
use talm_wire::proto::inspect as inspectapi;
use talm_wire::proto::machine;
use talm_wire::proto::time as timeapi;

/// The Talos time service.
const TIME: &str = "time.TimeService";
/// The Talos inspect service.
const INSPECT: &str = "inspect.InspectService";
/// The Talos image service.
const IMAGES: &str = "machine.ImageService";

/// The containerd namespace and driver of talosctl's `-k`: `k8s.io` through the CRI, else
/// Talos's own `system` namespace.
fn inventory(kubernetes: bool) -> (String, i32) {
    if kubernetes {
        ("k8s.io".into(), common::ContainerDriver::Cri as i32)
    } else {
        ("system".into(), common::ContainerDriver::Containerd as i32)
    }
}

impl Client {
    fn times(&self) -> timeapi::time_service_client::TimeServiceClient<Checked> {
        timeapi::time_service_client::TimeServiceClient::new(self.channel.clone())
    }

    fn images(&self) -> machine::image_service_client::ImageServiceClient<Checked> {
        machine::image_service_client::ImageServiceClient::new(self.channel.clone())
            .max_decoding_message_size(super::MAX_MESSAGE)
    }

    /// Containers of Talos's containerd, or with `kubernetes` the CRI's pods and containers.
    pub async fn containers(&self, kubernetes: bool) -> Result<Vec<machine::ContainerInfo>> {
        let (namespace, driver) = inventory(kubernetes);
        let req = machine::ContainersRequest { namespace, driver };
        let mut c = self.machine();
        let r = self
            .call("Containers", MACHINE, c.containers(self.request(req, true)))
            .await?;
        Ok(self
            .first("Containers", r.into_inner().messages, |m| {
                m.metadata.as_ref()
            })?
            .containers)
    }

    /// Memory and CPU of the containers `containers` lists.
    pub async fn stats(&self, kubernetes: bool) -> Result<Vec<machine::Stat>> {
        let (namespace, driver) = inventory(kubernetes);
        let req = machine::StatsRequest { namespace, driver };
        let mut c = self.machine();
        let r = self
            .call("Stats", MACHINE, c.stats(self.request(req, true)))
            .await?;
        Ok(self
            .first("Stats", r.into_inner().messages, |m| m.metadata.as_ref())?
            .stats)
    }

    pub async fn processes(&self) -> Result<Vec<machine::ProcessInfo>> {
        let mut c = self.machine();
        let r = self
            .call("Processes", MACHINE, c.processes(self.request((), true)))
            .await?;
        Ok(self
            .first("Processes", r.into_inner().messages, |m| {
                m.metadata.as_ref()
            })?
            .processes)
    }

    /// `/proc/meminfo` of the node (kB).
    pub async fn memory(&self) -> Result<machine::MemInfo> {
        let mut c = self.machine();
        let r = self
            .call("Memory", MACHINE, c.memory(self.request((), true)))
            .await?;
        Ok(self
            .first("Memory", r.into_inner().messages, |m| m.metadata.as_ref())?
            .meminfo
            .unwrap_or_default())
    }

    pub async fn mounts(&self) -> Result<Vec<machine::MountStat>> {
        let mut c = self.machine();
        let r = self
            .call("Mounts", MACHINE, c.mounts(self.request((), true)))
            .await?;
        Ok(self
            .first("Mounts", r.into_inner().messages, |m| m.metadata.as_ref())?
            .stats)
    }

    pub async fn netstat(
        &self,
        req: machine::NetstatRequest,
    ) -> Result<Vec<machine::ConnectRecord>> {
        let mut c = self.machine();
        let r = self
            .call("Netstat", MACHINE, c.netstat(self.request(req, true)))
            .await?;
        Ok(self
            .first("Netstat", r.into_inner().messages, |m| m.metadata.as_ref())?
            .connectrecord)
    }

    /// Hands every message of a stream to `each` as it arrives, after its in-band error check;
    /// the deadline measures the silence before each message, not the whole stream.
    async fn each<M>(
        &self,
        call: &str,
        service: &'static str,
        mut stream: Streaming<M>,
        md: impl Fn(&M) -> Option<&common::Metadata>,
        mut each: impl FnMut(M) -> Result<()>,
    ) -> Result<()> {
        while let Some(item) = self.next_within(call, service, &mut stream).await? {
            self.in_band(call, md(&item))?;
            each(item)?;
        }
        Ok(())
    }

    /// A file's content, chunk by chunk.
    pub async fn read(&self, path: &str, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut sink = sink;
        let req = machine::ReadRequest { path: path.into() };
        let mut c = self.machine();
        let stream = self
            .call("Read", MACHINE, c.read(self.stream_request(req, true)))
            .await?
            .into_inner();
        self.each(
            "Read",
            MACHINE,
            stream,
            |d| d.metadata.as_ref(),
            |d| sink(&d.bytes),
        )
        .await
    }

    /// A gzip-compressed tar of the tree at `path`, chunk by chunk; problems the node reports
    /// after the data fail the call once the data has been handed over.
    pub async fn copy(&self, path: &str, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut sink = sink;
        let req = machine::CopyRequest {
            root_path: path.into(),
        };
        let mut c = self.machine();
        let stream = self
            .call("Copy", MACHINE, c.copy(self.stream_request(req, true)))
            .await?
            .into_inner();
        self.each(
            "Copy",
            MACHINE,
            stream,
            |d| d.metadata.as_ref(),
            |d| sink(&d.bytes),
        )
        .await
    }

    /// Directory entries, one by one (entries the node could not read carry `error`).
    pub async fn list_files(
        &self,
        req: machine::ListRequest,
        each: impl FnMut(machine::FileInfo) -> Result<()>,
    ) -> Result<()> {
        let mut c = self.machine();
        let stream = self
            .call("List", MACHINE, c.list(self.stream_request(req, true)))
            .await?
            .into_inner();
        self.each("List", MACHINE, stream, |f| f.metadata.as_ref(), each)
            .await
    }

    /// Disk usage entries in the order the node sends them (the root last).
    pub async fn disk_usage(
        &self,
        req: machine::DiskUsageRequest,
    ) -> Result<Vec<machine::DiskUsageInfo>> {
        let mut c = self.machine();
        let stream = self
            .call(
                "DiskUsage",
                MACHINE,
                c.disk_usage(self.stream_request(req, true)),
            )
            .await?
            .into_inner();
        let mut out = Vec::new();
        self.each(
            "DiskUsage",
            MACHINE,
            stream,
            |d| d.metadata.as_ref(),
            |d| {
                out.push(d);
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }

    /// The node's time against its configured NTP server, or against `server`.
    pub async fn time(&self, server: Option<&str>) -> Result<timeapi::Time> {
        let mut c = self.times();
        let r = match server {
            None => {
                self.call("Time", TIME, c.time(self.request((), true)))
                    .await?
            }
            Some(s) => {
                let req = timeapi::TimeRequest { server: s.into() };
                self.call("TimeCheck", TIME, c.time_check(self.request(req, true)))
                    .await?
            }
        };
        let call = if server.is_some() {
            "TimeCheck"
        } else {
            "Time"
        };
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())
    }

    /// The controller runtime's dependency edges, in the order the node sends them.
    pub async fn dependencies(&self) -> Result<Vec<inspectapi::ControllerDependencyEdge>> {
        let mut c =
            inspectapi::inspect_service_client::InspectServiceClient::new(self.channel.clone())
                .max_decoding_message_size(super::MAX_MESSAGE);
        let call = "ControllerRuntimeDependencies";
        let r = self
            .call(
                call,
                INSPECT,
                c.controller_runtime_dependencies(self.request((), true)),
            )
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .edges)
    }

    /// The images of a containerd instance (ImageService is called one-to-one, `node`).
    pub async fn image_list(
        &self,
        instance: common::ContainerdInstance,
    ) -> Result<Vec<machine::ImageServiceListResponse>> {
        let req = machine::ImageServiceListRequest {
            containerd: Some(instance),
        };
        let mut c = self.images();
        let stream = self
            .call("List", IMAGES, c.list(self.stream_request(req, false)))
            .await?
            .into_inner();
        let mut out = Vec::new();
        self.each(
            "List",
            IMAGES,
            stream,
            |_| None,
            |i| {
                out.push(i);
                Ok(())
            },
        )
        .await?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Field numbers and types as Talos puts them on the wire (a real talosctl decodes these).
    #[test]
    fn inspection_messages_use_talos_field_numbers() {
        let stat = machine::Stat {
            namespace: "a".into(),
            id: "b".into(),
            memory_usage: 1,
            cpu_usage: 2,
            pod_id: "c".into(),
            name: "d".into(),
        };
        // No field 3.
        assert_eq!(
            stat.encode_to_vec(),
            [0x0a, 1, b'a', 0x12, 1, b'b', 0x20, 1, 0x28, 2, 0x32, 1, b'c', 0x3a, 1, b'd']
        );
        let list = machine::ListRequest {
            root: "/".into(),
            recurse: true,
            recursion_depth: 2,
            types: vec![machine::list_request::Type::Directory as i32],
            report_xattrs: true,
        };
        assert_eq!(
            list.encode_to_vec(),
            [0x0a, 1, b'/', 0x10, 1, 0x18, 2, 0x22, 1, 1, 0x28, 1]
        );
        let c = machine::ContainerInfo {
            internal_id: "x".into(),
            uid: "y".into(),
            ..Default::default()
        };
        assert_eq!(c.encode_to_vec(), [0x4a, 1, b'x', 0x52, 1, b'y']);
        let r = machine::ConnectRecord {
            process: Some(machine::connect_record::Process {
                pid: 1,
                name: String::new(),
            }),
            netns: "n".into(),
            ..Default::default()
        };
        assert_eq!(
            r.encode_to_vec(),
            [0x8a, 0x01, 2, 0x08, 1, 0x92, 0x01, 1, b'n']
        );
        let t = timeapi::Time {
            server: "s".into(),
            ..Default::default()
        };
        assert_eq!(t.encode_to_vec(), [0x12, 1, b's']);
        let i = machine::ImageServiceListResponse {
            labels: [("k".to_string(), "v".to_string())].into(),
            ..Default::default()
        };
        assert_eq!(i.encode_to_vec(), [0x2a, 6, 0x0a, 1, b'k', 0x12, 1, b'v']);
        let m = machine::MemInfo {
            directmap1g: 1,
            ..Default::default()
        };
        assert_eq!(m.encode_to_vec(), [0x80, 0x03, 1]);
        let x = machine::FileInfo {
            xattrs: vec![machine::Xattr {
                name: "a".into(),
                data: vec![],
            }],
            ..Default::default()
        };
        assert_eq!(x.encode_to_vec(), [0x62, 3, 0x0a, 1, b'a']);
    }
}
