//! The real pmupcw.sys on 128 virtual processors in two groups of 64 (Skylake PMU): instances are
//! named `group,number` with id group*64+number ("1,63" is id 127); counters are owned and programmed
//! on all 128 processors; an overflow on a processor of group 1 is delivered to the driver's handler
//! on that processor, which folds it into that processor's counts only (exact totals everywhere);
//! unload leaves nothing behind.

use crate::common;

use common::cpu_models::ACTIVE;
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::{cpuid, msr, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;

const PROCESSORS: u32 = 128;
/// Group 1, number 36.
const OVERFLOWING: u32 = 100;

#[test]
fn processors_128_in_two_groups() {
    topology::configure(PROCESSORS, 64);
    assert_eq!((topology::active_count(0), topology::active_count(1)), (64, 64));
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);

    let (status, instances) = pcw::collect(HARDWARE_COUNTERS, &pcw::Query::default()).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    let named: Vec<_> = instances.iter().map(|instance| (instance.name.clone(), instance.id)).collect();
    assert_eq!(named, expected_processor_instances(&[64, 64]));
    assert_eq!(named[127], ("1,63".to_string(), 127));
    assert_eq!(named[64], ("1,0".to_string(), 64));
    let by_id = pcw::Query { instance_id: 127, ..pcw::Query::default() };
    let (_, one) = pcw::collect(HARDWARE_COUNTERS, &by_id).expect("registered");
    assert_eq!(one.iter().map(|instance| instance.name.as_str()).collect::<Vec<_>>(), ["1,63"]);

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    let status = driver_status();
    assert_eq!((status[0], status[1]), (ACTIVE, 7));
    assert!(matches!(hal::owner(), Some(hal::Owner::Driver { overflow_handler: Some(_), .. })));
    for vp in 0..PROCESSORS {
        assert_eq!(pmu::programmed_counters(vp).len(), 7, "processor {vp} not programmed");
    }
    let instructions = pmu::counter_of(OVERFLOWING, pmu::INSTRUCTIONS).expect("instructions are counted");
    pmu::preload(OVERFLOWING, instructions, (1 << 48) - 5);
    for vp in 0..PROCESSORS {
        pmu::step(vp, 100 + u64::from(vp));
    }
    assert_eq!(pmu::delivered(), 1, "overflow interrupts delivered");
    let collected = collect_totals();
    assert_eq!(collected.len(), PROCESSORS as usize);
    let truth = true_totals(PROCESSORS);
    for (vp, ((totals, overflows), expected)) in collected.iter().zip(&truth).enumerate() {
        assert_eq!(totals, expected, "processor {vp} ({})", named[vp].0);
        assert_eq!(*overflows, u64::from(vp as u32 == OVERFLOWING), "processor {vp}'s overflow interrupts");
    }
    assert_eq!(collected[OVERFLOWING as usize].0[pmu::INSTRUCTIONS], (1 << 48) - 5 + 16 * 200);
    assert_eq!(driver_status()[2], 1, "the status counterset's overflow interrupts");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    assert!(msr::writes().iter().all(|write| write.pmu_owned));
    let touched: std::collections::BTreeSet<u32> =
        msr::writes().iter().map(|write| write.processor).collect();
    assert_eq!(touched.len(), PROCESSORS as usize, "processors whose MSRs were written");
    for vp in 0..PROCESSORS {
        assert!(pmu::at_power_on(vp), "processor {vp}'s PMU left programmed after unload");
    }
    assert_clean();
}
