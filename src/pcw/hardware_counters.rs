//! The "Hardware Counters" counterset: one instance per logical processor, answered by callback.
//!
//! Everything here is pure: the kernel boundary hands in the processor list, a source of counts, the
//! kernel's upcase and clock, and a sink that is PcwAddInstance in the driver and a recorder in
//! tests. It holds no lock and allocates nothing, so any number of consumers may collect at once.

use super::driver_status::DriverStatus;
use super::processor_instances::ProcessorInstance;
use super::query::{AddInstanceFailed, CountersetCallback, InstanceSink, Query};
use crate::counters::hardware_counters::{AtomicCells, Counterset, DESCRIPTORS};
use crate::counters::hardware_counters_by_core_type;
use crate::pcw::CountersetBlock;
use crate::sync::Ordering;
use crate::sync::unmodelled::AtomicU32;
use core::ops::Deref;

/// Where the per-processor counter blocks come from: the PMU client's published blocks in the driver.
pub trait CountSource: Sync {
    /// Brings every processor's counts up to date, once per collect, before [`CountSource::block`]; or,
    /// within the minimum collect interval of the last read, leaves them as that read left them.
    fn refresh(&self) {}
    /// The collect that [`CountSource::refresh`] began has handed every instance to PCW.
    fn collect_done(&self) {}
    /// The counter block of the processor with system index `processor_index`, as of the last
    /// refresh: counts extended to 64 bits, never decreasing. PCW copies it as it is, so it is
    /// atomic: a refresh for another consumer may be storing into it meanwhile. `None` for an index
    /// the source has no processor for (the instance then reads 0).
    fn block(&self, processor_index: u32) -> Option<&AtomicCells>;
    /// [`CountSource::block`]'s values now (tests compare blocks by value).
    #[cfg(test)]
    fn values(&self, processor_index: u32) -> crate::counters::hardware_counters::Values {
        self.block(processor_index).map(|block| block.values()).unwrap_or_default()
    }
    /// Whether some processor's Core Type counter shows `core_type`.
    fn has_core_type(&self, core_type: u8) -> bool;
    /// The sum of the blocks of every processor whose Core Type counter shows `core_type`, as of the
    /// last refresh.
    fn core_type_values(&self, core_type: u8) -> hardware_counters_by_core_type::Values;
    /// A consumer added counters (AddCounter). PCW promises no matching RemoveCounter, and registry
    /// consumers never add at all, so a source must not rely on pairs: it hears of additions, and
    /// of collects through [`CountSource::refresh`].
    fn query_added(&self) {}
}

/// The counterset's callback state. `P` holds the processor instances (pool memory in the driver, a
/// Vec in tests).
pub struct HardwareCounters<P, S> {
    processors: P,
    source: S,
    status: &'static DriverStatus,
    /// AddCounter minus RemoveCounter, never below zero: informational only, since PCW does not
    /// promise that they pair.
    active_queries: AtomicU32,
    upcase: fn(u16) -> u16,
    clock: fn() -> u64,
}

impl<P: Deref<Target = [ProcessorInstance]> + Sync, S: CountSource> HardwareCounters<P, S> {
    /// `upcase` folds case for instance-mask matching (the kernel's RtlUpcaseUnicodeChar); `clock`
    /// reads a clock in nanoseconds (collect times, for Avg. Collect Time (ns)).
    pub fn new(
        processors: P,
        source: S,
        status: &'static DriverStatus,
        upcase: fn(u16) -> u16,
        clock: fn() -> u64,
    ) -> Self {
        HardwareCounters { processors, source, status, active_queries: AtomicU32::new(0), upcase, clock }
    }

    #[cfg(test)]
    pub fn active_queries(&self) -> u32 {
        self.active_queries.load(Ordering::Acquire)
    }

    fn selected<'q>(&'q self, query: &Query<'q>) -> impl Iterator<Item = &'q ProcessorInstance> {
        let (query, upcase) = (*query, self.upcase);
        self.processors
            .iter()
            .filter(move |processor| query.selects(processor.id(), processor.name(), upcase))
    }
}

impl<P: Deref<Target = [ProcessorInstance]> + Sync, S: CountSource> CountersetCallback
    for HardwareCounters<P, S>
{
    type Counterset = Counterset;

    fn counter_added(&self, _counter_mask: u64) {
        let _ = self.active_queries.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_add(1));
        self.source.query_added();
    }

    fn counter_removed(&self, _counter_mask: u64) {
        // Never below zero, even if PCW reports more removals than additions.
        let _ = self
            .active_queries
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| count.checked_sub(1));
    }

    fn enumerate<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        for processor in self.selected(query) {
            sink.add(processor.name(), processor.id(), None)?;
        }
        Ok(())
    }

    fn collect<K: InstanceSink<Counterset>>(
        &self,
        query: &Query<'_>,
        sink: &mut K,
    ) -> Result<(), AddInstanceFailed> {
        let started = (self.clock)();
        let result = collect_refreshed(&self.source, || {
            let every_counter = query.counter_mask & EVERY_COUNTER == EVERY_COUNTER;
            let mut add = |processor: &ProcessorInstance| {
                match self.source.block(processor.index()) {
                    // PCW copies the block itself: nothing to assemble per instance.
                    Some(block) if every_counter => sink.add_block(processor.name(), processor.id(), block),
                    block => add_requested(sink, processor, block, query.counter_mask),
                }
            };
            // Every instance (what PDH's wildcard asks for) without a match per instance.
            if query.selects_every_instance() {
                self.processors.iter().try_for_each(&mut add)
            } else {
                self.selected(query).try_for_each(&mut add)
            }
        });
        self.status.record_collect((self.clock)().wrapping_sub(started));
        result
    }
}

/// Adds `processor`'s instance with only the counters in `counter_mask` (the others 0; all 0 without
/// a block). Kept out of line: the common query asks for every counter, and this path's copy of the
/// block would otherwise cost that one registers saved and restored per instance.
#[inline(never)]
fn add_requested<K: InstanceSink<Counterset>>(
    sink: &mut K,
    processor: &ProcessorInstance,
    block: Option<&AtomicCells>,
    counter_mask: u64,
) -> Result<(), AddInstanceFailed> {
    let mut values = block.map(|block| block.values()).unwrap_or_default();
    values.clear_unrequested(counter_mask);
    sink.add(processor.name(), processor.id(), Some(&values))
}

/// The counter mask bits of every counter of the counterset.
const EVERY_COUNTER: u64 = {
    let mut mask = 0u64;
    let mut index = 0;
    while index < DESCRIPTORS.len() {
        mask |= 1 << DESCRIPTORS[index].id;
        index += 1;
    }
    mask
};

/// One collect from `source`: brought up to date once, then `collect` hands over the instances, then
/// the source hears that the collect is done (whatever `collect` returned).
pub(super) fn collect_refreshed<S: CountSource, R>(source: &S, collect: impl FnOnce() -> R) -> R {
    source.refresh();
    let result = collect();
    source.collect_done();
    result
}

#[cfg(test)]
mod tests;
