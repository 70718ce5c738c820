//! The pending-operations check at unload catches a purpose-built faulty driver (tests/faulty-drivers/
//! dpc-pending-at-unload): a polling DPC on processor 1 queues itself again every time it runs, and
//! DriverUnload returns without stopping it. The double reports Driver Verifier's 0xCE at DriverUnload,
//! stops the driver's DPCs (on Windows the machine would stop), and finds nothing else wrong.

use crate::faulty_support;

use faulty_support::*;
use kernel_double::control::dpc;
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use std::time::{Duration, Instant};

#[test]
fn faulty_dpc_still_queued_at_unload_is_reported() {
    let mut driver = load(DPC_PENDING_AT_UNLOAD);
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let started = Instant::now();
    while dpc::executions().len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(10), "the polling DPC never ran");
        std::thread::yield_now();
    }
    assert!(dpc::executions().iter().all(|run| run.processor == 1), "targeted at processor 1");
    assert!(dpc::outstanding() > 0, "it keeps itself queued");

    assert!(driver.unload());
    let report = Report::now();
    assert_eq!(report.violations.len(), 1, "{report}");
    let violation = &report.violations[0];
    assert_eq!(violation.at, "DriverUnload", "{violation}");
    assert!(violation.message.contains("1 DPC(s) of the driver still queued or running"), "{violation}");
    assert!(violation.message.contains("0xCE"), "{violation}");
    assert_eq!(report.pending_dpcs, 0, "the double stopped the driver's DPCs:\n{report}");
    let runs = dpc::executions().len();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(dpc::executions().len(), runs, "no DPC of the unloaded driver runs any more");
    assert!(report.leaked_pool.is_empty() && report.registrations.is_empty() && report.hal_owner.is_none());
}
