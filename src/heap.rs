//! The heap of every program built on the library (the binary, its tests and benches):
//! mimalloc, and the settings the binary gives it before anything else runs.
//!
//! Rhai's interpreter allocates and frees a value for nearly every step it takes. With glibc's
//! malloc (two arenas) that was a fifth of a render's time, and a 100-node bring-up spent
//! 2.65–3.31 s of CPU where it spends 2.00–2.58 s with mimalloc (issue 12; the figures are in
//! `benches/render.rs` and the README). The price is memory: mimalloc keeps pages per thread,
//! so the 32 threads of a fleet step hold about 20 MiB more at their peak. mimalloc is built
//! without transparent huge pages (`no_thp`: it stops mimalloc asking for them where the system
//! leaves the choice to programs, `madvise`; a system set to `always` still hands them out):
//! with them, every thread's first pages became 2 MiB ones and the 50-node bring-up peaked at
//! 272 MiB.

use std::os::raw::{c_int, c_long};

#[global_allocator]
static HEAP: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_t` (include/mimalloc.h).
const PURGE_DELAY: c_int = 15;

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    fn mi_option_get(option: c_int) -> c_long;
}

/// Gives freed pages back to the system at once instead of a second later (mimalloc v3's
/// default). A fleet command's worker threads free most of what they allocate for a node when
/// they move to the next one; held for a second, those pages raised the peak of a 100-node
/// bring-up from 85 MiB to over 100 MiB.
pub fn tune() {
    // SAFETY: sets an allocator option; any thread may call it at any time.
    unsafe { mi_option_set(PURGE_DELAY, 0) }
}

/// mimalloc's purge delay in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reads an allocator option.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_index_is_mimallocs_purge_delay() {
        // v3's default purge delay is 1000 ms and no other option defaults to that value, so
        // reading it before `tune` proves the index; the binary's `main` calls `tune`, tests
        // do not, except this one, after the check.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 1000);
        }
        tune();
        assert_eq!(purge_delay_ms(), 0);
    }

    /// Kibibytes of transparent huge pages in the process's anonymous memory.
    fn anon_huge_kib() -> u64 {
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
        rollup
            .lines()
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn the_heap_takes_no_transparent_huge_pages() {
        // With them (mimalloc's default where the system leaves the choice to programs), a
        // thread's first allocations took 2 MiB pages: this heap of 64 MiB would show them.
        let heap: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 1 << 20]).collect();
        assert_eq!(heap.iter().map(|v| v[4095] as usize).sum::<usize>(), 2016);
        assert_eq!(anon_huge_kib(), 0);
    }
}
