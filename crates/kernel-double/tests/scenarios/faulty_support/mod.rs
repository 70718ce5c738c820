//! Shared by the faulty_*.rs scenarios: finds the purpose-built faulty drivers of tests/faulty-drivers/
//! (each a separate image, built like pmupcw.sys) and runs a scenario in a child process when the fault
//! kills the process.
//!
//! The drivers are built before the tests, by `cargo make faulty-drivers` (which `cargo make test` and
//! `cargo make nextest` run first), into their own target directory, `target/faulty-drivers`; the task
//! leaves a stamp file there. A scenario fails, naming that command, when the stamp is missing or older
//! than a file under tests/faulty-drivers/: it must not pass on images of older sources, or on none.

use crate::common::death;
pub use crate::common::death::is_child;
use kernel_double::driver::Driver;
use kernel_double::image_map::Section;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::SystemTime;

pub const POOL_LEAK: &str = "faulty_pool_leak";
pub const SPINLOCK_IN_PMI: &str = "faulty_spinlock_in_pmi";
pub const MSR_WITHOUT_OWNERSHIP: &str = "faulty_msr_without_ownership";
pub const PAGEABLE_AT_DISPATCH: &str = "faulty_pageable_at_dispatch";
pub const POOL_OVERRUN: &str = "faulty_pool_overrun";
pub const DPC_PENDING_AT_UNLOAD: &str = "faulty_dpc_pending_at_unload";
pub const MMIO_MISUSE: &str = "faulty_mmio_misuse";
/// Not faulty: exercises DPCs, thread affinity and KeGetCurrentThread, checking the results itself.
pub const KERNEL_SERVICES_PROBE: &str = "probe_kernel_services";

const TARGET: &str = "x86_64-pc-windows-msvc";
/// What `cargo make faulty-drivers` touches after a successful build (Makefile.toml).
const STAMP: &str = "target/faulty-drivers/built.stamp";
const BUILD_COMMAND: &str = "cargo make faulty-drivers";

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// The newest modification time of a file under `dir`, and that file.
fn newest(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut found: Option<(SystemTime, PathBuf)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest(&path)
        } else {
            entry.metadata().and_then(|metadata| metadata.modified()).ok().map(|time| (time, path))
        };
        if let Some(candidate) = candidate
            && found.as_ref().is_none_or(|(time, _)| candidate.0 > *time)
        {
            found = Some(candidate);
        }
    }
    found
}

/// The folder holding the faulty drivers' images, checked once per process: built by
/// `cargo make faulty-drivers` since the last change to their sources.
pub fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let repository = repository();
        let stamp = repository.join(STAMP);
        let Ok(built) = fs::metadata(&stamp).and_then(|metadata| metadata.modified()) else {
            panic!(
                "the faulty drivers are not built ({} is missing): run `{BUILD_COMMAND}`",
                stamp.display()
            );
        };
        if let Some((changed, file)) = newest(&repository.join("tests/faulty-drivers"))
            && changed > built
        {
            panic!("the faulty drivers were built before {} changed: run `{BUILD_COMMAND}`", file.display());
        }
        repository.join("target/faulty-drivers").join(TARGET).join("release")
    })
}

/// The image of faulty driver `name` (cargo names a cdylib `.dll`; the double loads it as a `.sys`).
pub fn image(name: &str) -> PathBuf {
    let image = built().join(format!("{name}.dll"));
    assert!(image.is_file(), "{} was not built: run `{BUILD_COMMAND}`", image.display());
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
/// child process (which sees [`is_child`]) after checking the faulty drivers are built, so that a
/// missing or stale build shows in the parent.
pub fn run_child(path: &str) -> (Output, String) {
    built();
    death::run_child(path)
}

/// The number after `prefix` in `text` (hex with 0x), e.g. the RVA of "image RVA 0x1234".
pub fn hex_after(text: &str, prefix: &str) -> Option<u64> {
    let start = text.find(prefix)? + prefix.len();
    let digits: String =
        text[start..].trim_start_matches("0x").chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).ok()
}
