//! What the driver keeps for each processor, in one pool allocation for all of them: the processor's
//! PMU state (`crate::pmu::processor`) and its published Hardware Counters block (`crate::block`).

use crate::counters::hardware_counters::AtomicCells;
use crate::pmu::processor::ProcessorPmu;

/// Everything the driver keeps for one processor: its PMU state and its published block. All zero is "nothing counted yet" (the pool
/// hands it out zeroed).
///
/// Not cache-line aligned, for the memory target (640 bytes of non-paged pool per processor): a line
/// may hold the end of one processor's block and the start of the next one's counters. Each is
/// written only on its own processor, the block only by a read (once per collect), so such a line
/// moves between the two at most once per collect.
#[repr(C)]
#[derive(Default)]
pub struct ProcessorState {
    pub pmu: ProcessorPmu,
    /// What a collect hands PCW for this processor: written only on this processor (by its reads)
    /// or before it counts, read by PCW's copy at any time.
    pub published: AtomicCells,
}

// The non-paged memory target: at most 640 bytes per processor, its instance (name and id) included.
// It was 512 while a plan held 8 counters; a plan now holds every counter a core has (8
// general-purpose and fixed counters 0-2, 24 bytes each in crate::pmu::fold) and fixed counter 3's
// wraps, in an overflow table of 16 places (8 bytes each): 128 bytes more.
const _: () = assert!(
    core::mem::size_of::<ProcessorState>()
        + core::mem::size_of::<crate::pcw::processor_instances::ProcessorInstance>()
        <= 640,
    "at most 640 bytes of state per processor"
);
