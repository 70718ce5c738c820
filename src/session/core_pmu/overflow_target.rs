//! What the overflow handler folds into: each processor's state and each core type's overflow
//! bits. A part of the client with an address of its own, so that the platform can hand it to the
//! HAL's overflow handler without knowing the client (`Platform::allocate`).

use super::processor_state::ProcessorState;
use crate::pmu::fold::OwnedMask;
use crate::pmu::hybrid::{CORE_TYPE_PLACES, Inline, Machine, PerCoreType};
use crate::sync::Ordering;
use crate::sync::unmodelled::AtomicU64;
use core::ops::Deref;

pub struct OverflowTarget<Processors> {
    /// Each processor's state, by processor index.
    pub(in crate::session) processors: Processors,
    /// Each core type's OwnedMask bits for the overflow handler, which may not take even a read lock:
    /// set before the counters are enabled, cleared after they are stopped.
    pub(in crate::session) pmi_owned: PerCoreType<Inline<AtomicU64>>,
}

impl<Processors: Deref<Target = [ProcessorState]>> OverflowTarget<Processors> {
    /// `processors`, none of whose core types owns an overflow bit yet.
    pub(in crate::session) fn new(machine: &Machine, processors: Processors) -> Self {
        let pmi_owned = PerCoreType::inline(machine, [const { AtomicU64::new(0) }; CORE_TYPE_PLACES]);
        OverflowTarget { processors, pmi_owned }
    }

    /// The overflow handler's work on processor `processor`: folds `overflow_bits` into its counts.
    /// Lock-free and call-free once inlined (the handler runs at PROFILE_LEVEL).
    #[inline(always)]
    pub fn fold(&self, processor: u32, overflow_bits: u64) {
        if let Some(processor) = self.processors.get(processor as usize) {
            let owned = self.pmi_owned.place(processor.pmu.core_type());
            processor.pmu.counters.fold(overflow_bits, OwnedMask::from_bits(owned.load(Ordering::Acquire)));
        }
    }

    /// How many processors there is state for (those active at load).
    pub fn processor_count(&self) -> u32 {
        self.processors.len() as u32
    }

    /// The core types of the processors, by processor index (for the platform's group affinities).
    pub fn core_type_of(&self, processor: usize) -> Option<u8> {
        self.processors.get(processor).map(|processor| processor.pmu.core_type())
    }
}
