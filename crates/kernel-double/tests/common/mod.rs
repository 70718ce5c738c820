//! Shared by the scenario tests: where the real driver is, and loading it.
//!
//! Each test file holds one scenario: the double's state (signal handler, GS, the fake kernel's tables)
//! is per process, and cargo runs each test file as its own process (cargo-nextest runs each test as
//! its own process anyway).

#![allow(dead_code)]

use kernel_double::driver::Driver;
use kernel_double::report::Report;
use std::path::{Path, PathBuf};

/// The release, signed `pmupcw.sys` that `cargo make package` (scripts/linux/package.sh) builds:
/// `$PMUPCW_PACKAGE_DIR/pmupcw.sys`, by default target/package/pmupcw/pmupcw.sys. A missing image fails
/// the test: it must not pass by running nothing.
pub fn driver_image() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let directory = std::env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository.join("target/package/pmupcw"), PathBuf::from);
    let image = directory.join("pmupcw.sys");
    assert!(
        image.is_file(),
        "{} is missing: run `cargo make package` (or `bash scripts/linux/package.sh`) first",
        image.display()
    );
    image
}

/// Loads the real driver.
pub fn load() -> Driver {
    let image = driver_image();
    Driver::load(&image).unwrap_or_else(|error| panic!("loading {}: {error}", image.display()))
}

/// Asserts nothing is left behind and nothing was violated, printing the report otherwise.
#[track_caller]
pub fn assert_clean() {
    let report = Report::now();
    assert!(report.is_clean(), "the driver left state behind or broke rules:\n{report}");
}

/// The hardware counter instance names and ids a topology must produce, in index order.
pub fn expected_processor_instances(groups: &[u32]) -> Vec<(String, u32)> {
    let mut instances = Vec::new();
    for (group, &count) in groups.iter().enumerate() {
        for number in 0..count {
            instances.push((format!("{group},{number}"), group as u32 * 64 + number));
        }
    }
    instances
}
