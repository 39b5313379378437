//! The `talm` binary: parse, run, exit with the code `run` returns.

#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

fn main() {
    talm::heap::tune();
    limit_malloc_arenas();
    std::process::exit(talm::run(std::env::args_os()));
}

/// glibc's malloc serves Rust's blocks over 256 bytes (`talm::heap`) and the C libraries
/// (aws-lc's TLS and keys); mimalloc serves the small ones. glibc gives each of up to 8 × cores threads its own heap
/// arena; a playbook driving hundreds of nodes on 32 threads then holds many half-empty
/// arenas. One arena (`MALLOC_ARENA_MAX=1`) lowered a bring-up's peak (`docs/performance.md`);
/// two keep some room for threads allocating at once.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator tunable; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}
