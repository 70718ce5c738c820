//! The pool leak checker catches a purpose-built faulty driver (tests/faulty-drivers/pool-leak): its
//! DriverEntry allocates 64 bytes tagged "Leak" and its DriverUnload never frees them. After unload the
//! double's leak report (Driver Verifier's 0x62 at unload) lists exactly that allocation, and nothing
//! else is wrong.

use crate::faulty_support;

use faulty_support::*;
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn faulty_pool_leak_is_reported_at_unload() {
    let mut driver = load(POOL_LEAK);
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert!(driver.unload());
    let report = Report::now();
    assert!(!report.is_clean(), "the leak was not reported:\n{report}");
    assert_eq!(report.leaked_pool.len(), 1, "{report}");
    let leak = report.leaked_pool[0];
    assert_eq!((leak.tag_text().as_str(), leak.size), ("Leak", 64), "{report}");
    assert_eq!(report.violations, [], "{report}");
    assert!(report.registrations.is_empty() && report.hal_owner.is_none() && report.msr_writes == 0);
    assert!(format!("{report}").contains("64 bytes, tag \"Leak\""), "{report}");
}
