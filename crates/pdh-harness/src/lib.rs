//! The pmupcw PDH stress harness (see `src/main.rs` and `cli::USAGE`). Everything here but `win` is
//! plain Rust and unit tested on any host; `win` is the thin layer over PDH and the service control
//! manager.

pub mod catalogue;
pub mod checks;
pub mod cli;
pub mod harness;
pub mod report;
#[cfg(windows)]
pub mod win;
