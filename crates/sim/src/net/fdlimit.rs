//! The open-file limit a simulator with many nodes needs: every node holds a listening socket
//! and every client connection one more, so the soft `RLIMIT_NOFILE` (often 1024) is raised to
//! the hard limit at start, and a node count the hard limit cannot hold is refused up front.

use anyhow::Result;

use talm_base::error::hinted;

/// Descriptors kept free beyond the listeners: stdio, the runtime, and client connections.
pub const HEADROOM: u64 = 256;

/// The soft and hard limits on open files.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every libc
fn get() -> std::io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

fn set_soft(soft: u64, hard: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `soft`/`hard` hold `nodes` listeners with headroom; `Err` says why not.
pub fn check(nodes: usize, soft: u64, hard: u64) -> Result<()> {
    let need = nodes as u64 + HEADROOM;
    if need <= soft.max(hard) {
        return Ok(());
    }
    Err(hinted(
        format!(
            "cannot serve {nodes} simulated nodes: the open-file limit is {hard} (hard), and each node needs a listening socket plus {HEADROOM} descriptors to spare ({need} in all)"
        ),
        format!("raise the hard limit (as root: `ulimit -Hn {need}`, or LimitNOFILE={need} in a systemd unit), or simulate fewer nodes"),
    ))
}

/// Raises the soft limit to the hard one when `nodes` listeners need it; refuses a count the
/// hard limit cannot hold. Returns the soft limit in force.
pub fn raise_for(nodes: usize) -> Result<u64> {
    let (soft, hard) = get().map_err(|e| anyhow::anyhow!("reading the open-file limit: {e}"))?;
    check(nodes, soft, hard)?;
    let need = nodes as u64 + HEADROOM;
    if soft >= need || soft >= hard {
        return Ok(soft);
    }
    set_soft(hard, hard).map_err(|e| {
        hinted(
            format!("cannot raise the open-file limit from {soft} to {hard} for {nodes} simulated nodes: {e}"),
            format!("raise it before starting (`ulimit -n {need}`), or simulate fewer nodes"),
        )
    })?;
    Ok(hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_beyond_the_hard_limit_is_refused_with_the_numbers() {
        assert!(check(5000, 1024, 524_288).is_ok());
        assert!(check(700, 1024, 1024).is_ok());
        let m = talm_base::error::render(&check(5000, 1024, 4096).unwrap_err());
        assert!(
            m.starts_with(
                "Error: cannot serve 5000 simulated nodes: the open-file limit is 4096 (hard)"
            ),
            "{m}"
        );
        assert!(m.contains("5256 in all"), "{m}");
        assert!(
            m.contains("\nhint: raise the hard limit (as root: `ulimit -Hn 5256`"),
            "{m}"
        );
    }

    #[test]
    fn the_soft_limit_is_raised_for_many_nodes() {
        let (_, hard) = get().unwrap();
        let nodes = hard.saturating_sub(HEADROOM).min(1 << 20);
        let soft = raise_for(nodes as usize).unwrap();
        assert!(soft >= nodes + HEADROOM || soft == hard, "{soft} of {hard}");
        assert_eq!(get().unwrap().0, soft);
    }
}
