//! 1000 load / DriverEntry / collect / DriverUnload cycles of fresh copies of the image: zero leaks, no
//! registration, thread or handle left behind, no violation.

use crate::common;

use kernel_double::control::{pcw, pool};
use kernel_double::driver::Driver;
use kernel_double::exports::Registry;
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn a_thousand_load_unload_cycles_leak_nothing() {
    let bytes = std::fs::read(common::driver_image()).expect("reading the driver");
    let registry = Registry::kernel();
    for cycle in 0..1000 {
        let mut driver = Driver::load_bytes(&bytes, &registry).expect("loading");
        assert_eq!(driver.driver_entry(), STATUS_SUCCESS, "cycle {cycle}");
        let (_, instances) = pcw::collect("Hardware Counters", &pcw::Query::default()).expect("registered");
        assert_eq!(instances.len(), 4, "cycle {cycle}");
        assert!(driver.unload(), "cycle {cycle}");
        assert!(pool::outstanding().is_empty(), "cycle {cycle} leaked {:?}", pool::outstanding());
    }
    common::assert_clean();
}
