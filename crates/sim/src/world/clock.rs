//! The simulated nodes' clocks: now, and when each node's current boot began. The first boot
//! began when the node was created; a later boot is dated when it is first looked at (a node
//! is looked at as soon as it serves, so that is close to when it came up).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Unix seconds now, with the fraction.
pub fn now() -> f64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_secs_f64()
}

fn boots() -> &'static Mutex<HashMap<String, (u64, f64)>> {
    static B: OnceLock<Mutex<HashMap<String, (u64, f64)>>> = OnceLock::new();
    B.get_or_init(|| Mutex::new(HashMap::new()))
}

/// When boot number `boot` of node `name` began (Unix seconds): `created` for the first boot,
/// else the first time this boot is asked about.
pub fn boot_time(name: &str, boot: u64, created: f64, now: f64) -> f64 {
    if boot <= 1 {
        return created;
    }
    let mut map = boots().lock().unwrap_or_else(|e| e.into_inner());
    let seen = map.entry(name.to_string()).or_insert((boot, now));
    if seen.0 != boot {
        *seen = (boot, now);
    }
    seen.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_keeps_its_start() {
        assert_eq!(boot_time("clock-test", 1, 100.0, 500.0), 100.0);
        assert_eq!(boot_time("clock-test", 2, 100.0, 600.0), 600.0);
        assert_eq!(boot_time("clock-test", 2, 100.0, 700.0), 600.0);
        assert_eq!(boot_time("clock-test", 3, 100.0, 800.0), 800.0);
    }
}
