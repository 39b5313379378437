//! The simulated nodes' clock: now, as the node's world reports it (when each boot began is the
//! node's own state, `State::booted`).

/// Unix seconds now, with the fraction.
pub fn now() -> f64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_secs_f64()
}
