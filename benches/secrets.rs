//! Prints how long the secrets work of `talm init` takes: bundle generation (RSA-4096 for the
//! service-account key dominates), the admin talosconfig, and sealing/opening a bundle with age.
//! Run: `cargo bench --bench secrets`.

/// Measured on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

use std::time::{Duration, Instant};

use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;
use talm::secrets::{crypt, talosconfig};

fn measure(name: &str, runs: u32, mut f: impl FnMut()) -> Duration {
    f(); // warm up
    let mut times = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "{name:<44} median {:>9.3} ms   min {:>9.3} ms   max {:>9.3} ms   ({runs} runs)",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
    median
}

fn main() {
    let now = time::OffsetDateTime::now_utc();
    measure("bundle, current contract (RSA-4096 SA key)", 10, || {
        Bundle::generate(Contract::CURRENT, now).unwrap();
    });
    measure("bundle, contract v1.6 (ECDSA SA key)", 20, || {
        Bundle::generate(Contract::parse("v1.6").unwrap(), now).unwrap();
    });
    let bundle = Bundle::generate(Contract::CURRENT, now).unwrap();
    let text = bundle.to_yaml().unwrap();
    measure("talosconfig with a new admin certificate", 50, || {
        talosconfig::generate(&bundle, "bench", &["127.0.0.1".into()], now).unwrap();
    });
    let key = crypt::parse_key(&crypt::new_key_file(), "talm.key").unwrap();
    let sealed = crypt::encrypt_yaml(&key, &text, "secrets.yaml", None).unwrap();
    measure("seal secrets.yaml (every value)", 50, || {
        crypt::encrypt_yaml(&key, &text, "secrets.yaml", None).unwrap();
    });
    measure("re-seal secrets.yaml, nothing changed", 50, || {
        crypt::encrypt_yaml(&key, &text, "secrets.yaml", Some(&sealed)).unwrap();
    });
    measure("open secrets.encrypted.yaml", 50, || {
        crypt::decrypt_yaml(&key, &sealed, "secrets.encrypted.yaml").unwrap();
    });
}
