//! Simulated Talos nodes started in-process for a test, on loopback addresses of its own.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use talm::proto::machine;
use talm::sim::{Node, NodeSpec, Sim};
use talm::talos::client::{Client, Options};
use talm::talos::creds::Auth;

/// Running nodes; stopped when dropped.
pub struct Nodes {
    sim: Option<Sim>,
}

impl Nodes {
    /// Nodes at `addrs` (port 50000), each adjusted by `tweak`.
    pub fn start(addrs: &[&str], tweak: impl Fn(&mut NodeSpec)) -> Nodes {
        let specs = addrs
            .iter()
            .map(|a| {
                let ip: IpAddr = a.parse().unwrap();
                let mut spec = NodeSpec::new(ip, 50000);
                spec.reboot_delay = Duration::from_millis(300);
                tweak(&mut spec);
                spec
            })
            .collect();
        Nodes {
            sim: Some(talm::talos::block_on(Sim::start(specs)).unwrap()),
        }
    }

    pub fn node(&self, addr: &str) -> &Arc<Node> {
        self.sim.as_ref().unwrap().node(addr).unwrap()
    }

    /// Applies `config` to a maintenance node and waits until it is back in normal mode.
    pub fn install(&self, addr: &str, config: &str) {
        let node = Arc::clone(self.node(addr));
        let boots = node.state().boots;
        let addr = addr.to_string();
        let config = config.to_string();
        talm::talos::block_on(async move {
            let opts = Options {
                auth: Auth::Insecure,
                timeout: Duration::from_secs(5),
            };
            let c = Client::connect(&addr, None, &opts).await.unwrap();
            c.apply(machine::ApplyConfigurationRequest {
                data: config.into_bytes(),
                mode: machine::apply_configuration_request::Mode::Auto as i32,
                dry_run: false,
                try_mode_timeout: None,
            })
            .await
            .unwrap();
            let mut rx = node.up.subscribe();
            tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|b| *b > boots))
                .await
                .unwrap()
                .unwrap();
        });
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        if let Some(sim) = self.sim.take() {
            talm::talos::block_on(sim.stop());
        }
    }
}
