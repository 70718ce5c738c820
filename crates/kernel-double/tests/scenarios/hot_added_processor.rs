//! A processor hot-added after DriverEntry (dynamic processor addition): it becomes active, so
//! KeIpiGenericCall runs the driver's workers on it too, but the driver made no instance and no
//! per-processor state for it at load. It must be left alone (not programmed, not released: its PMU
//! stays as it came up) and counted in the status counterset's Processors Not Monitored, while every
//! processor known at load counts exactly as before.

use crate::common;

use common::cpu_models::ACTIVE;
use common::*;
use kernel_double::control::pcw;
use kernel_double::cpu::{cpuid, msr, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 4;
/// The status counterset's Processors Not Monitored (manifest id 12).
const PROCESSORS_NOT_MONITORED: usize = 12;

#[test]
fn a_processor_added_after_load_is_left_alone_and_counted() {
    cpuid::set_model(&cpuid::SKYLAKE);
    topology::configure(PROCESSORS, 64);
    topology::reserve_hot_add(1);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let added = topology::hot_add();
    assert_eq!((added, topology::processor_count()), (PROCESSORS, PROCESSORS + 1));

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert_eq!(driver_status()[0], ACTIVE);
    let event_selects: Vec<u64> = (0..4).map(|i| msr::read(added, 0x186 + i)).collect();
    assert!(
        pmu::at_power_on(added),
        "processor {added}, added after DriverEntry, was programmed blind: counters {:x?}, event selects \
         {event_selects:x?} (bit 20: overflow interrupt)",
        pmu::programmed_counters(added)
    );
    for vp in 0..=added {
        pmu::step(vp, 1000 * u64::from(vp + 1));
    }
    let totals: Vec<[u64; 7]> = collect_totals().into_iter().map(|(totals, _)| totals).collect();
    assert_eq!(totals, true_totals(PROCESSORS), "one instance per processor known at load, exact");
    assert_eq!(driver_status()[PROCESSORS_NOT_MONITORED], 1, "Processors Not Monitored");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    for vp in 0..=added {
        assert!(pmu::at_power_on(vp), "processor {vp}'s PMU not at its power-on values after unload");
    }
    assert_clean();
}
