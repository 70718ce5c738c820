//! The "Hardware Counters Driver" counterset: one instance, made with PcwCreateInstance over a
//! resident block that PCW reads directly while the driver updates it with atomic operations.

use crate::counters::driver_status::AtomicValues;
use crate::pmu::events::CUSTOM_EVENTS;
use crate::sync::Ordering;

/// The PMU State counter's values (documented in the manifest). The unsupported states say why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum PmuState {
    Idle = 0,
    Active = 1,
    Busy = 2,
    /// A hypervisor that does not pass the PMU through to this partition.
    UnsupportedHypervisor = 3,
    Failed = 4,
    /// Intel without architectural performance monitoring (or version 1 only).
    UnsupportedNoArchitecturalPerfmon = 5,
    /// Neither Intel nor AMD.
    UnsupportedVendor = 6,
    /// Too few counters to count instructions and cycles together.
    UnsupportedTooFewCounters = 7,
    /// Held off by the boot guard: this start touches no hardware (Hardware Guard says why).
    HeldOff = 8,
}

/// The Hardware Guard counter's values (documented in the manifest): the marker around the first
/// touch of the hardware (`crate::session::boot_guard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum HardwareGuard {
    /// No marker: nothing touched yet in this load, or every first touch was read back cleanly.
    Clear = 0,
    /// The marker is set: a first touch has not been read back yet.
    Pending = 1,
    /// The start found the marker set: the previous start stopped between a first touch and its
    /// clean read. No hardware is touched until an administrator deletes it.
    HeldOff = 2,
    /// The start found a marker it could not read, or not as it writes it: held off likewise (for
    /// this start only, if the value could not be read).
    HeldOffUnreadable = 3,
    /// Writing the marker failed: the hardware was not touched; the next acquisition tries again.
    MarkerNotWritten = 4,
}

/// The Top-down Source counter's values (documented in the manifest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TopdownSource {
    /// No fixed counter 3 with IA32_PERF_METRICS, and no top-down events in the active profile.
    Unavailable = 0,
    /// Fixed counter 3 and IA32_PERF_METRICS.
    PerfMetrics = 1,
    /// General-purpose events of the topdown profile.
    ProfileEvents = 2,
    /// No usable PMU.
    NoPmu = 3,
    // 4 was "only some core types have it, and the driver programs what every core type has": since
    // each core type has its own plan, no longer reported (the number stays retired).
    /// Fixed counter 3 with IA32_PERF_METRICS is reported, but under a hypervisor that no public source
    /// says passes IA32_PERF_METRICS through (an intercepted access is a #GP): not used.
    NotUnderHypervisor = 5,
    /// A hybrid processor whose core types differ: each processor's source is its core type's (the
    /// performance cores' fixed counter 3 with IA32_PERF_METRICS, say, and none on the efficient
    /// cores in the default profile).
    PerCoreType = 6,
}

/// The PMU Ownership counter's values (documented in the manifest): how the driver holds the PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum PmuOwnership {
    /// Nothing owned.
    None = 0,
    /// HalAllocateHardwareCounters resource lists naming the plans' counters, one per core type on
    /// that type's processors: other HAL clients (WPR, xperf) keep every counter the lists leave.
    ResourceLists = 1,
    /// The whole PMU (every counter of every processor, no overflow handler: polled), where no list
    /// was granted: no other HAL client gets a counter while it is held.
    WholePmu = 2,
}

/// The resident status block and the operations on it.
#[derive(Debug)]
pub struct DriverStatus {
    block: AtomicValues,
}

impl Default for DriverStatus {
    fn default() -> Self {
        Self::new()
    }
}

/// The driver's one status block: a static, so it is resident, lives exactly as long as the image,
/// and can be read by PCW and updated by the PMU client without anyone owning it.
pub static STATUS: DriverStatus = DriverStatus::new();

impl DriverStatus {
    /// All zero: PMU state Idle, nothing counted.
    pub const fn new() -> Self {
        DriverStatus { block: AtomicValues::new() }
    }

    /// The block PCW reads.
    pub fn block(&self) -> &AtomicValues {
        &self.block
    }

    pub fn set_pmu_state(&self, state: PmuState) {
        self.block.pmu_state.store(state as u32, Ordering::Release);
    }

    /// Counts one collect request that took `nanoseconds`.
    pub fn record_collect(&self, nanoseconds: u64) {
        self.block.collect_requests.fetch_add(1, Ordering::Relaxed);
        // The time sum is 64-bit (perf_average_bulk: 584 years of collecting before it wraps);
        // perf_average_base is 32-bit, and PDH uses the difference of two samples.
        self.block.collect_time_ns.fetch_add(nanoseconds, Ordering::Relaxed);
        self.block.collect_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one collect that read every processor (an all-processor call).
    pub fn record_fresh_collect(&self) {
        self.block.fresh_collects.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one collect served from the last read, within the minimum collect interval.
    pub fn record_served_collect(&self) {
        self.block.served_collects.fetch_add(1, Ordering::Relaxed);
    }

    /// The minimum interval between fresh reads in force, in milliseconds.
    pub fn set_minimum_collect_interval(&self, milliseconds: u32) {
        self.block.minimum_collect_interval.store(milliseconds, Ordering::Relaxed);
    }

    pub fn set_topdown_source(&self, source: TopdownSource) {
        self.block.topdown_source.store(source as u32, Ordering::Relaxed);
    }

    /// The profile (0 default, 1 topdown, 2 custom) and the values and lines rejected, as the last
    /// acquisition read them.
    pub fn set_profile(&self, profile: u32, rejected: u32) {
        self.block.active_profile.store(profile, Ordering::Relaxed);
        self.block.rejected_custom_events.store(rejected, Ordering::Relaxed);
    }

    /// The event select value of each custom event line (0 for a line absent or rejected), as the
    /// Custom Event n Select counters publish them: the same on every processor, so one copy here
    /// rather than one per processor instance.
    pub fn set_custom_event_selects(&self, selects: [u64; CUSTOM_EVENTS]) {
        let block = &self.block;
        let fields = [
            &block.custom_event0_select,
            &block.custom_event1_select,
            &block.custom_event2_select,
            &block.custom_event3_select,
            &block.custom_event4_select,
            &block.custom_event5_select,
            &block.custom_event6_select,
            &block.custom_event7_select,
        ];
        for (field, select) in fields.into_iter().zip(selects) {
            field.store(select, Ordering::Relaxed);
        }
    }

    pub fn pmu_state(&self) -> u32 {
        self.block.pmu_state.load(Ordering::Acquire)
    }

    pub fn set_counters_owned(&self, counters: u32) {
        self.block.counters_owned.store(counters, Ordering::Relaxed);
    }

    pub fn set_hardware_guard(&self, guard: HardwareGuard) {
        self.block.hardware_guard.store(guard as u32, Ordering::Relaxed);
    }

    pub fn set_pmu_ownership(&self, ownership: PmuOwnership) {
        self.block.pmu_ownership.store(ownership as u32, Ordering::Relaxed);
    }

    /// The memory controller source's status (`crate::imc::status`: its numbers are the counter's).
    pub fn set_memory_controller_state(&self, status: crate::imc::status::Status) {
        self.block.memory_controller_state.store(status.value(), Ordering::Relaxed);
    }

    pub fn memory_controller_state(&self) -> u32 {
        self.block.memory_controller_state.load(Ordering::Relaxed)
    }

    /// Overflow interrupts summed over every processor (the handler counts per processor, so that
    /// processors never contend for one cache line at PROFILE_LEVEL).
    pub fn set_overflow_interrupts(&self, total: u64) {
        self.block.overflow_interrupts.fetch_max(total, Ordering::Relaxed);
    }

    pub fn record_ownership_failure(&self) {
        self.block.ownership_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_allocation_failure(&self) {
        self.block.allocation_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The processors active now that were not when the driver loaded, which it leaves alone.
    pub fn set_processors_not_monitored(&self, processors: u32) {
        self.block.processors_not_monitored.store(processors, Ordering::Relaxed);
    }

    /// The events the active profile asks for that found no counter, and those the processor cannot
    /// count, as status bits (`crate::pmu::events::STATUS_BIT_ORDER`).
    pub fn set_events_not_counted(&self, without_counter: u32, not_supported: u32) {
        self.block.events_without_counter.store(without_counter, Ordering::Relaxed);
        self.block.events_not_supported.store(not_supported, Ordering::Relaxed);
    }

    /// Counts one processor whose counters had lost their programming and were programmed again.
    /// Lock-free: called inside the all-processor call.
    pub fn record_reprogram(&self) {
        self.block.pmu_reprograms.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_block_is_idle_and_zero() {
        let status = DriverStatus::new();
        let block = status.block();
        assert_eq!(block.pmu_state.load(Ordering::Relaxed), PmuState::Idle as u32);
        assert_eq!(block.collect_requests.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn updates_land_in_the_block_pcw_reads() {
        let status = DriverStatus::new();
        status.set_pmu_state(PmuState::Busy);
        status.record_allocation_failure();
        status.record_collect(7);
        status.record_collect(u64::from(u32::MAX) + 3); // past 32 bits: the 64-bit sum holds it
        let block = status.block();
        assert_eq!(block.pmu_state.load(Ordering::Relaxed), 2);
        assert_eq!(block.allocation_failures.load(Ordering::Relaxed), 1);
        assert_eq!(block.collect_requests.load(Ordering::Relaxed), 2);
        assert_eq!(block.collect_count.load(Ordering::Relaxed), 2);
        assert_eq!(block.collect_time_ns.load(Ordering::Relaxed), u64::from(u32::MAX) + 10);
    }
}
