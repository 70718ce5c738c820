//! Perflib calls the callback from several threads at once: 8 consumer threads collect and enumerate
//! through the real driver's callback concurrently, each on its own virtual processor, and every result
//! is complete. Unload afterwards is clean.

use crate::common;

use kernel_double::control::pcw;
use kernel_double::cpu;
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn eight_threads_collect_at_once() {
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let expected = common::expected_processor_instances(&[4]);
    std::thread::scope(|scope| {
        for thread in 0..8u32 {
            let expected = &expected;
            scope.spawn(move || {
                cpu::enter(thread % 4);
                assert_eq!(pcw::add_counter("Hardware Counters", u64::MAX), Some(STATUS_SUCCESS));
                for round in 0..200 {
                    let query = pcw::Query { counter_mask: 1 << (round % 21), ..pcw::Query::default() };
                    let (status, instances) = pcw::collect("Hardware Counters", &query).unwrap();
                    assert_eq!(status, STATUS_SUCCESS);
                    let named: Vec<_> = instances.iter().map(|i| (i.name.clone(), i.id)).collect();
                    assert_eq!(&named, expected);
                    let (_, enumerated) =
                        pcw::enumerate("Hardware Counters", &pcw::Query::default()).unwrap();
                    assert_eq!(enumerated.len(), 4);
                }
                assert_eq!(pcw::remove_counter("Hardware Counters", u64::MAX), Some(STATUS_SUCCESS));
            });
        }
    });
    assert!(driver.unload());
    common::assert_clean();
}
