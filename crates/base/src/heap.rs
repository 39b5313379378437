//! The heap of every program built on talm (the binary, its tests and benches each declare
//! [`Split`] their `#[global_allocator]`): small blocks from mimalloc, larger ones from the
//! system's malloc, and the settings the binary gives mimalloc before anything else runs.
//!
//! Rhai's interpreter allocates and frees a small value for nearly every step it takes, and
//! glibc's malloc made that a large part of a render's time. But mimalloc keeps pages per thread
//! and size class, so with every block in it the 32 threads of a fleet step held far more memory
//! at their peak than with glibc, the more the larger the blocks it served. So blocks up to
//! [`SMALL_MAX`] come from mimalloc and the rest (buffers, texts, YAML trees' vectors) from
//! glibc. A block's size is known again when it is freed (Rust passes its layout), so each block
//! goes back to the allocator it came from. The measurements behind the split are in
//! `docs/performance.md`.
//!
//! mimalloc is built without transparent huge pages (`no_thp`: it stops mimalloc asking for them
//! where the system leaves the choice to programs, `madvise`; a system set to `always` still
//! hands them out): with them, every thread's first pages became huge pages and a bring-up's
//! peak grew several times over.

use std::alloc::{GlobalAlloc, Layout, System};
use std::os::raw::{c_int, c_long};

use mimalloc::MiMalloc;

/// The largest block mimalloc serves; larger ones come from the system's malloc.
pub const SMALL_MAX: usize = 256;

/// Blocks up to [`SMALL_MAX`] bytes from mimalloc, larger ones from the system's malloc.
pub struct Split;

fn small(size: usize) -> bool {
    size <= SMALL_MAX
}

// SAFETY: every block is freed, and resized in place, by the allocator that made it: both
// choose by the block's size, which the caller passes unchanged (`GlobalAlloc`'s contract); a
// resize across `SMALL_MAX` moves the block.
unsafe impl GlobalAlloc for Split {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if small(layout.size()) {
            MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (small(layout.size()), small(new_size)) {
            (true, true) => MiMalloc.realloc(ptr, layout, new_size),
            (false, false) => System.realloc(ptr, layout, new_size),
            _ => {
                // The caller guarantees `new_size` rounded up to the alignment does not overflow.
                let moved = Layout::from_size_align_unchecked(new_size, layout.align());
                let new = self.alloc(moved);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_t` (include/mimalloc.h).
const PURGE_DELAY: c_int = 15;

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    fn mi_option_get(option: c_int) -> c_long;
}

/// Gives freed pages back to the system at once instead of a second later (mimalloc v3's
/// default). A fleet command's worker threads free most of what they allocate for a node when
/// they move to the next one; held for a second, those pages raised a bring-up's peak
/// (figures in `docs/performance.md`).
pub fn tune() {
    // SAFETY: sets an allocator option; any thread may call it at any time.
    unsafe { mi_option_set(PURGE_DELAY, 0) }
}

/// mimalloc's purge delay in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reads an allocator option.
    unsafe { mi_option_get(PURGE_DELAY) }
}

/// This crate's own tests run on the heap they test.
#[cfg(test)]
#[global_allocator]
static HEAP: Split = Split;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    extern "C" {
        fn mi_is_in_heap_region(p: *const c_void) -> bool;
    }

    /// Whether `p` points into mimalloc's memory.
    fn from_mimalloc(p: *const u8) -> bool {
        // SAFETY: only compares the address with mimalloc's regions.
        unsafe { mi_is_in_heap_region(p.cast()) }
    }

    #[test]
    fn small_blocks_come_from_mimalloc_and_larger_ones_from_the_system() {
        let small = vec![7u8; SMALL_MAX];
        let large = vec![7u8; SMALL_MAX + 1];
        assert!(from_mimalloc(small.as_ptr()));
        assert!(!from_mimalloc(large.as_ptr()));
        // A block over-aligned for its size still comes from the allocator its size picks.
        let aligned = Layout::from_size_align(64, 4096).unwrap();
        // SAFETY: a non-zero size; freed with the same layout.
        unsafe {
            let p = HEAP.alloc(aligned);
            assert!(from_mimalloc(p) && (p as usize).is_multiple_of(4096));
            HEAP.dealloc(p, aligned);
        }
    }

    #[test]
    fn a_block_resized_across_the_limit_moves_with_its_bytes() {
        let mut v: Vec<u8> = (0..200u8).collect();
        assert!(from_mimalloc(v.as_ptr()));
        v.reserve_exact(1000 - v.len());
        assert!(
            !from_mimalloc(v.as_ptr()),
            "grown past SMALL_MAX: the system's"
        );
        assert!(v.iter().copied().eq(0..200u8));
        v.extend(0..100u8);
        v.truncate(100);
        v.shrink_to_fit();
        assert!(
            from_mimalloc(v.as_ptr()),
            "shrunk to 100 bytes: mimalloc's again"
        );
        assert!(v.iter().copied().eq(0..100u8));
        // Within one allocator a resize stays in it.
        let mut w = vec![1u8; 300];
        w.resize(5000, 2);
        assert!(!from_mimalloc(w.as_ptr()));
        assert_eq!((w[299], w[300], w.len()), (1, 2, 5000));
    }

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
        // thread's first allocations took 2 MiB pages: this heap of 64 MiB, all of it in
        // mimalloc's blocks, would show them.
        let heap: Vec<Box<[u8; SMALL_MAX]>> = (0..(64 << 20) / SMALL_MAX)
            .map(|i| Box::new([i as u8; SMALL_MAX]))
            .collect();
        assert!(from_mimalloc(heap[0].as_ptr()));
        assert_eq!(
            heap.iter().map(|b| b[7] as usize).sum::<usize>(),
            heap.len() / 256 * (0..256).sum::<usize>()
        );
        assert_eq!(anon_huge_kib(), 0);
    }
}
