//! The memory controller's rules catch a purpose-built faulty driver (tests/faulty-drivers/mmio-misuse)
//! that breaks each of them: on Skylake it maps the counters' page cached, reads an offset no counter
//! is at, writes a counter and leaves the page mapped at unload; where MCHBAR is disabled or the host
//! bridge's ID is unknown it maps at all. Each is a violation (or, for the page left mapped, the
//! unload report's) naming what was wrong. pmupcw.sys itself breaks none (scenarios/memory_controller.rs).

use crate::faulty_support;

use faulty_support::*;
use kernel_double::control::memory;
use kernel_double::cpu::cpuid;
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

/// Loads the faulty driver on platform `name` and runs DriverEntry; the violations (at, message).
fn run_on(name: &str) -> (kernel_double::driver::Driver, Vec<(String, String)>) {
    let (model, platform) = memory::named(name).expect("a platform");
    cpuid::set_model(model);
    memory::set(platform);
    let mut driver = load(MMIO_MISUSE);
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let caught = violations::all()
        .into_iter()
        .map(|violation| (violation.at.to_string(), violation.message))
        .collect();
    (driver, caught)
}

#[test]
fn faulty_cached_mapping_stray_read_write_and_leftover_page_are_caught() {
    let (mut driver, caught) = run_on("skylake");
    let at =
        |site: &str| caught.iter().filter(|(at, _)| at == site).map(|(_, m)| m.clone()).collect::<Vec<_>>();
    let mapped = at("MmMapIoSpaceEx");
    assert!(mapped.len() == 1 && mapped[0].contains("without PAGE_NOCACHE"), "{caught:?}");
    let mmio = at("memory controller MMIO");
    assert_eq!(mmio.len(), 2, "the stray read and the write, not the read of DATA_READS: {caught:?}");
    assert!(mmio[0].contains("+ 0x5000, outside the whitelisted offsets"), "{}", mmio[0]);
    assert!(mmio[1].contains("32-bit write of 0x0") && mmio[1].contains("read-only"), "{}", mmio[1]);
    assert!(driver.unload());
    let report = Report::now();
    assert_eq!(report.io_mappings.len(), 1, "{report}");
    assert!(report.to_string().contains("I/O space still mapped: 1 mapping(s)"), "{report}");
}

#[test]
fn faulty_mapping_while_mchbar_is_disabled_is_caught() {
    let (mut driver, caught) = run_on("skylake-mchbar-disabled");
    assert!(
        caught.len() == 1 && caught[0].0 == "MmMapIoSpaceEx" && caught[0].1.contains("is disabled"),
        "{caught:?}"
    );
    assert!(driver.unload());
    assert_eq!(Report::now().io_mappings, []);
}

#[test]
fn faulty_mapping_behind_an_unknown_device_id_is_caught() {
    let (mut driver, caught) = run_on("skylake-unknown-bridge");
    assert!(
        caught.len() == 1
            && caught[0].0 == "MmMapIoSpaceEx"
            && caught[0].1.contains("has no memory controller"),
        "{caught:?}"
    );
    assert!(driver.unload());
    assert_eq!(Report::now().io_mappings, []);
}
