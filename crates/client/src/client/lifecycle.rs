//! LifecycleService calls (Talos v1.13 and later, one-to-one): Upgrade streams the installer's
//! output as it runs, then its exit code.

use anyhow::Result;
use tokio_stream::StreamExt;

use super::Client;
use talm_wire::proto::common::ContainerdInstance;
use talm_wire::proto::machine;

/// The Talos lifecycle service.
const LIFECYCLE: &str = "machine.LifecycleService";

/// One message of an installer run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Install {
    /// A chunk of the installer's output.
    Output(String),
    /// The installer ended with this code (non-zero: it failed).
    Exit(i32),
}

impl Install {
    /// As talosctl prints a progress message: the output as it is, the code as `Exit code: N`.
    pub fn text(&self) -> String {
        match self {
            Install::Output(m) => m.clone(),
            Install::Exit(c) => format!("Exit code: {c}"),
        }
    }
}

impl Client {
    /// LifecycleService.Upgrade of `image` (already pulled into `containerd`): `each` sees every
    /// message as it arrives.
    pub async fn lifecycle_upgrade(
        &self,
        containerd: ContainerdInstance,
        image: &str,
        mut each: impl FnMut(&Install),
    ) -> Result<()> {
        use machine::lifecycle_service_install_progress::Response as R;
        let req = machine::LifecycleServiceUpgradeRequest {
            containerd: Some(containerd),
            source: Some(machine::InstallArtifactsSource {
                image_name: image.into(),
            }),
        };
        let mut c =
            machine::lifecycle_service_client::LifecycleServiceClient::new(self.channel.clone());
        let mut stream = self
            .call("Upgrade", LIFECYCLE, c.upgrade(self.request(req, false)))
            .await?
            .into_inner();
        let read = async {
            while let Some(m) = stream.next().await {
                match m?.progress.and_then(|p| p.response) {
                    Some(R::Message(text)) => each(&Install::Output(text)),
                    Some(R::ExitCode(code)) => each(&Install::Exit(code)),
                    None => {}
                }
            }
            Ok::<_, tonic::Status>(())
        };
        self.call("Upgrade", LIFECYCLE, read).await
    }
}
