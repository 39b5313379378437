//! The calls of the client that change a node: service start/stop/restart, container restart,
//! rollback, shutdown, META, block device wipes (StorageService) and image pulls
//! (ImageService, one-to-one). Unary calls check in-band errors like the other machine calls.

use anyhow::Result;
use tokio_stream::StreamExt;

use super::Client;
use crate::errors::MACHINE;
use crate::transport::Checked;
use talm_wire::proto::machine;
use talm_wire::proto::storage;

/// The Talos storage service.
const STORAGE: &str = "storage.StorageService";
/// The Talos image service.
const IMAGES: &str = "machine.ImageService";

/// What `service ID start|stop|restart` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceAction {
    Start,
    Stop,
    Restart,
}

/// One progress message of an image pull, or its end.
#[derive(Debug, Clone)]
pub enum PullUpdate {
    Layer(machine::ImageServicePullProgress),
    Done(String),
}

impl Client {
    fn storage(&self) -> storage::storage_service_client::StorageServiceClient<Checked> {
        storage::storage_service_client::StorageServiceClient::new(self.channel.clone())
    }

    /// ServiceStart / ServiceStop / ServiceRestart: the node's answer (`Service "x" started`).
    pub async fn service_action(&self, id: &str, action: ServiceAction) -> Result<String> {
        let mut c = self.machine();
        let id = id.to_string();
        Ok(match action {
            ServiceAction::Start => {
                let req = machine::ServiceStartRequest { id };
                let r = self
                    .call(
                        "ServiceStart",
                        MACHINE,
                        c.service_start(self.request(req, true)),
                    )
                    .await?;
                self.first("ServiceStart", r.into_inner().messages, |m| {
                    m.metadata.as_ref()
                })?
                .resp
            }
            ServiceAction::Stop => {
                let req = machine::ServiceStopRequest { id };
                let r = self
                    .call(
                        "ServiceStop",
                        MACHINE,
                        c.service_stop(self.request(req, true)),
                    )
                    .await?;
                self.first("ServiceStop", r.into_inner().messages, |m| {
                    m.metadata.as_ref()
                })?
                .resp
            }
            ServiceAction::Restart => {
                let req = machine::ServiceRestartRequest { id };
                let r = self
                    .call(
                        "ServiceRestart",
                        MACHINE,
                        c.service_restart(self.request(req, true)),
                    )
                    .await?;
                self.first("ServiceRestart", r.into_inner().messages, |m| {
                    m.metadata.as_ref()
                })?
                .resp
            }
        })
    }

    /// Restart: kills a container (`system` namespace, or `k8s.io` through the CRI).
    pub async fn restart(&self, id: &str, kubernetes: bool) -> Result<()> {
        let (namespace, driver) = if kubernetes {
            ("k8s.io", talm_wire::proto::common::ContainerDriver::Cri)
        } else {
            (
                "system",
                talm_wire::proto::common::ContainerDriver::Containerd,
            )
        };
        let req = machine::RestartRequest {
            namespace: namespace.into(),
            id: id.into(),
            driver: driver as i32,
        };
        let mut c = self.machine();
        let r = self
            .call("Restart", MACHINE, c.restart(self.request(req, true)))
            .await?;
        self.first("Restart", r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    pub async fn rollback(&self) -> Result<()> {
        let mut c = self.machine();
        let r = self
            .call(
                "Rollback",
                MACHINE,
                c.rollback(self.request(machine::RollbackRequest {}, true)),
            )
            .await?;
        self.first("Rollback", r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    /// Shutdown: the actor ID of the shutdown sequence.
    pub async fn shutdown(&self, force: bool) -> Result<String> {
        let mut c = self.machine();
        let req = machine::ShutdownRequest { force };
        let r = self
            .call("Shutdown", MACHINE, c.shutdown(self.request(req, true)))
            .await?;
        Ok(self
            .first("Shutdown", r.into_inner().messages, |m| m.metadata.as_ref())?
            .actor_id)
    }

    pub async fn meta_write(&self, key: u32, value: Vec<u8>) -> Result<()> {
        let mut c = self.machine();
        let req = machine::MetaWriteRequest { key, value };
        let r = self
            .call("MetaWrite", MACHINE, c.meta_write(self.request(req, true)))
            .await?;
        self.first("MetaWrite", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })?;
        Ok(())
    }

    pub async fn meta_delete(&self, key: u32) -> Result<()> {
        let mut c = self.machine();
        let req = machine::MetaDeleteRequest { key };
        let r = self
            .call(
                "MetaDelete",
                MACHINE,
                c.meta_delete(self.request(req, true)),
            )
            .await?;
        self.first("MetaDelete", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })?;
        Ok(())
    }

    /// BlockDeviceWipe of `devices` (one request, all checked before any is wiped).
    pub async fn wipe(&self, devices: Vec<storage::BlockDeviceWipeDescriptor>) -> Result<()> {
        let mut c = self.storage();
        let req = storage::BlockDeviceWipeRequest { devices };
        let r = self
            .call(
                "BlockDeviceWipe",
                STORAGE,
                c.block_device_wipe(self.request(req, true)),
            )
            .await?;
        self.first("BlockDeviceWipe", r.into_inner().messages, |m| {
            m.metadata.as_ref()
        })?;
        Ok(())
    }

    /// ImageService.Pull (`node` routing): every progress message, then the pulled name.
    pub async fn image_pull(
        &self,
        containerd: talm_wire::proto::common::ContainerdInstance,
        image_ref: &str,
    ) -> Result<Vec<PullUpdate>> {
        use machine::image_service_pull_response::Response as R;
        let req = machine::ImageServicePullRequest {
            containerd: Some(containerd),
            image_ref: image_ref.into(),
        };
        let mut c = machine::image_service_client::ImageServiceClient::new(self.channel.clone());
        let mut stream = self
            .call("ImagePull", IMAGES, c.pull(self.request(req, false)))
            .await?
            .into_inner();
        let read = async {
            let mut out = Vec::new();
            while let Some(m) = stream.next().await {
                match m?.response {
                    Some(R::PullProgress(p)) => out.push(PullUpdate::Layer(p)),
                    Some(R::Name(n)) => out.push(PullUpdate::Done(n)),
                    None => {}
                }
            }
            Ok::<_, tonic::Status>(out)
        };
        self.call("ImagePull", IMAGES, read).await
    }

    /// ImageService.Remove (`node` routing): one image name out of a containerd instance.
    pub async fn image_remove(
        &self,
        containerd: talm_wire::proto::common::ContainerdInstance,
        image_ref: &str,
    ) -> Result<()> {
        let req = machine::ImageServiceRemoveRequest {
            containerd: Some(containerd),
            image_ref: image_ref.into(),
        };
        let mut c = machine::image_service_client::ImageServiceClient::new(self.channel.clone());
        self.call("ImageRemove", IMAGES, c.remove(self.request(req, false)))
            .await?;
        Ok(())
    }
}
