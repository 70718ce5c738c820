//! pdh-harness: run on a Windows machine where pmupcw is installed (see `cli::USAGE`).

fn main() {
    #[cfg(windows)]
    std::process::exit(pdh_harness::win::main());
    #[cfg(not(windows))]
    {
        eprintln!(
            "pdh-harness must run on Windows, where pmupcw is installed; build it with \
             `cargo build --release --target x86_64-pc-windows-gnu -p pdh-harness`"
        );
        std::process::exit(2);
    }
}
