//! DriverUnload while consumers collect: PcwUnregister waits for running callbacks and refuses new ones,
//! so the driver frees what its callback reads only after the last callback has returned.

use crate::common;

use kernel_double::control::pcw;
use kernel_double::cpu;
use kernel_double::status::STATUS_SUCCESS;
use std::sync::atomic::{AtomicU32, Ordering};

#[test]
fn unload_while_four_threads_collect() {
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let collected = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for thread in 0..4u32 {
            let collected = &collected;
            scope.spawn(move || {
                cpu::enter(thread);
                // Until the counterset is gone (None), every collect is complete.
                while let Some((status, instances)) =
                    pcw::collect("Hardware Counters", &pcw::Query::default())
                {
                    assert_eq!(status, STATUS_SUCCESS);
                    assert_eq!(instances.len(), 4);
                    collected.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while collected.load(Ordering::Relaxed) < 200 {
            std::thread::yield_now();
        }
        assert!(driver.unload());
    });
    assert!(pcw::collect("Hardware Counters", &pcw::Query::default()).is_none());
    common::assert_clean();
}
