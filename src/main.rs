//! The `talm` binary: parse, run, exit with the code `run` returns.

fn main() {
    std::process::exit(talm::run(std::env::args_os()));
}
