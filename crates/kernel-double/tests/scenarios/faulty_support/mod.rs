//! Shared by the faulty_*.rs scenarios: builds the purpose-built faulty drivers of tests/faulty-drivers/
//! (each a separate image, built like pmupcw.sys) and runs a scenario in a child process when the fault
//! kills the process.
//!
//! The drivers are built with
//! `cargo build --release --target x86_64-pc-windows-msvc --manifest-path tests/faulty-drivers/Cargo.toml`
//! into their own target directory, `target/faulty-drivers`, so the build never waits on the outer
//! cargo's lock; concurrent test processes serialise on that directory's own lock, and every build
//! after the first is a no-op.

use crate::common::death;
pub use crate::common::death::is_child;
use kernel_double::driver::Driver;
use kernel_double::image_map::Section;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub const POOL_LEAK: &str = "faulty_pool_leak";
pub const SPINLOCK_IN_PMI: &str = "faulty_spinlock_in_pmi";
pub const MSR_WITHOUT_OWNERSHIP: &str = "faulty_msr_without_ownership";
pub const PAGEABLE_AT_DISPATCH: &str = "faulty_pageable_at_dispatch";
pub const POOL_OVERRUN: &str = "faulty_pool_overrun";
pub const DPC_PENDING_AT_UNLOAD: &str = "faulty_dpc_pending_at_unload";
/// Not faulty: exercises DPCs, thread affinity and KeGetCurrentThread, checking the results itself.
pub const KERNEL_SERVICES_PROBE: &str = "probe_kernel_services";

const TARGET: &str = "x86_64-pc-windows-msvc";

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// Builds every faulty driver (once per process) and returns the folder holding the images.
pub fn build() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let repository = repository();
        let target_dir = repository.join("target/faulty-drivers");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let started = std::time::Instant::now();
        let output = Command::new(cargo)
            // The repository's .cargo/config.toml (rust-lld, +crt-static) and rust-toolchain.toml apply.
            .current_dir(repository.join("tests/faulty-drivers"))
            .args(["build", "--release", "--target", TARGET, "--manifest-path"])
            .arg(repository.join("tests/faulty-drivers/Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target_dir)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .output()
            .expect("running cargo to build tests/faulty-drivers");
        assert!(
            output.status.success(),
            "building tests/faulty-drivers failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("faulty drivers built in {:.2?}", started.elapsed());
        target_dir.join(TARGET).join("release")
    })
}

/// The image of faulty driver `name` (cargo names a cdylib `.dll`; the double loads it as a `.sys`).
pub fn image(name: &str) -> PathBuf {
    let image = build().join(format!("{name}.dll"));
    assert!(image.is_file(), "{} was not built", image.display());
    image
}

/// Loads faulty driver `name` into the double.
pub fn load(name: &str) -> Driver {
    let image = image(name);
    Driver::load(&image).unwrap_or_else(|error| panic!("loading {}: {error}", image.display()))
}

/// The loaded image's section `name`.
pub fn section(driver: &Driver, name: &str) -> Section {
    driver
        .image()
        .sections()
        .iter()
        .find(|section| section.name == name)
        .unwrap_or_else(|| panic!("no {name} section in {:?}", driver.image().sections()))
        .clone()
}

/// Whether `rva` lies in `section`.
pub fn contains(section: &Section, rva: u64) -> bool {
    (rva as usize) >= section.rva && (rva as usize) < section.rva + section.length
}

/// Runs the test at `path` (`concat!(module_path!(), "::", name)`) of this test binary alone in a
/// child process (which sees [`is_child`]) after building the faulty drivers here, so that a build
/// failure shows in the parent.
pub fn run_child(path: &str) -> (Output, String) {
    build();
    death::run_child(path)
}

/// The number after `prefix` in `text` (hex with 0x), e.g. the RVA of "image RVA 0x1234".
pub fn hex_after(text: &str, prefix: &str) -> Option<u64> {
    let start = text.find(prefix)? + prefix.len();
    let digits: String =
        text[start..].trim_start_matches("0x").chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).ok()
}
