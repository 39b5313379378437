//! What the benches share: the resources a child process used, read as it is reaped.

use std::process::Child;
use std::time::Duration;

/// What one child process used, from wait4.
pub struct Usage {
    pub ok: bool,
    pub cpu: Duration,
    pub max_rss_kib: u64,
}

/// Reaps `child` with wait4 (std's wait would not give the child's rusage).
pub fn wait_usage(child: &Child) -> Usage {
    let mut status = 0;
    // SAFETY: rusage is plain data, zeroed is a valid value; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: pid is a child of this process that nothing else waits for.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(
        got,
        pid,
        "wait4 failed: {}",
        std::io::Error::last_os_error()
    );
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Usage {
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss as u64,
    }
}
