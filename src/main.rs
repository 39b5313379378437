//! The `talm` binary: parse, run, exit with the code `run` returns.

fn main() {
    limit_malloc_arenas();
    std::process::exit(talm::run(std::env::args_os()));
}

/// glibc gives each of up to 8 × cores threads its own heap arena; a playbook driving hundreds
/// of nodes on a pool of threads then holds many half-empty arenas (its resident memory grew
/// by a third). Two arenas serve talm's threads as fast.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator tunable; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}
