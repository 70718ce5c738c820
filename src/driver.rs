//! The driver's state between DriverEntry and DriverUnload, and the order things are set up and torn
//! down in.

use crate::counters::{driver_status, hardware_counters};
use crate::kernel::pcw::{self, CallbackCounterset, SingleInstanceCounterset};
use crate::kernel::pool::{PoolBox, PoolSlice};
use crate::kernel::{NtStatus, clock, processors};
use crate::pcw::driver_status::STATUS;
use crate::pcw::hardware_counters::{CountSource, EventCounts, HardwareCounters};
use crate::pcw::processor_instances::ProcessorInstance;
use windows_sys::Win32::Foundation::STATUS_INSUFFICIENT_RESOURCES;

/// Counts before the PMU client exists: every counter reads 0.
pub struct NoCounts;

impl CountSource for NoCounts {
    fn counts(&self, _processor_index: u32) -> EventCounts {
        EventCounts::default()
    }
}

type HardwareCountersProvider = HardwareCounters<PoolSlice<ProcessorInstance>, NoCounts>;

/// Everything DriverEntry set up. Fields drop in declaration order, which is teardown order: the
/// countersets unregister (waiting for running callbacks) before anything a callback reads is freed,
/// and each owns what its callbacks read.
pub struct Driver {
    _driver_status: SingleInstanceCounterset,
    _hardware_counters: CallbackCounterset<HardwareCountersProvider>,
}

impl Driver {
    /// Sets everything up at PASSIVE_LEVEL. On failure, what was already set up is torn down (in
    /// reverse order, by its owners' drops) before the error is returned.
    pub fn load() -> Result<Self, NtStatus> {
        let processors = processors::active_processors().ok_or_else(|| out_of_memory("processor table"))?;
        let processor_count = processors.len();
        let provider =
            HardwareCounters::new(processors, NoCounts, &STATUS, pcw::upcase, clock::performance_counter);
        let provider = PoolBox::new(provider).map_err(|_| out_of_memory("Hardware Counters provider"))?;
        let hardware_counters = CallbackCounterset::register(
            hardware_counters::NAME_UTF16,
            hardware_counters::DESCRIPTORS,
            provider,
        )
        .inspect_err(|status| log_error!("PcwRegister(Hardware Counters) failed: {status:#x}"))?;
        let driver_status = SingleInstanceCounterset::register(
            driver_status::NAME_UTF16,
            driver_status::DESCRIPTORS,
            STATUS.block(),
        )
        .inspect_err(|status| log_error!("PcwRegister(Hardware Counters Driver) failed: {status:#x}"))?;
        log_info!("countersets registered for {processor_count} processors");
        Ok(Driver { _driver_status: driver_status, _hardware_counters: hardware_counters })
    }
}

fn out_of_memory(what: &str) -> NtStatus {
    STATUS.record_allocation_failure();
    log_error!("out of non-paged pool for the {what}");
    STATUS_INSUFFICIENT_RESOURCES
}
