//! One processor's counting state.

use super::fold::ProcessorCounters;
use super::frequency::FrequencyCounters;
use super::hybrid::CoreType;
use super::poll::PollCounters;
use core::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// One processor's state: the overflow counts (or, without an overflow interrupt, the polled values)
/// and reported values and the last APERF/MPERF readings (the top-down totals are kept where they are
/// published, crate::session::publish). All zero is "nothing counted yet" (the pool hands it out
/// zeroed).
#[repr(C)]
#[derive(Default)]
pub struct PerProcessor {
    pub counters: ProcessorCounters,
    pub frequency: FrequencyCounters,
    /// Which programming check the next collect makes (they take turns: one rdmsr per collect; see
    /// [`crate::pmu::program::Programming::intact_in_turn`]).
    pub check_turn: AtomicU32,
    /// The processor's [`CoreType`], as a number: set once at load, before the state is shared.
    core_type: AtomicU8,
}

impl PerProcessor {
    /// The polled counters of a session without an overflow interrupt (kept in the cells an
    /// interrupt-driven session counts overflows in).
    pub fn poll(&self) -> PollCounters<'_> {
        PollCounters::over(self.counters.session_cells())
    }

    pub fn set_core_type(&self, core_type: CoreType) {
        self.core_type.store(core_type as u8, Ordering::Relaxed);
    }

    /// The processor's [`CoreType`] as the Core Type counters show it.
    pub fn core_type(&self) -> u8 {
        self.core_type.load(Ordering::Relaxed)
    }

    /// The programming check turn of this read, and the next for the next (only this processor's
    /// reads take turns: a load and a store suffice).
    pub fn next_check(&self) -> usize {
        let turn = self.check_turn.load(Ordering::Relaxed);
        self.check_turn.store(turn.wrapping_add(1), Ordering::Relaxed);
        turn as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn check_turns_count_up_and_wrap() {
        let processor = PerProcessor::default();
        let turns: Vec<usize> = (0..4).map(|_| processor.next_check()).collect();
        assert_eq!(turns, [0, 1, 2, 3]);
        processor.check_turn.store(u32::MAX, Ordering::Relaxed);
        assert_eq!((processor.next_check(), processor.next_check()), (u32::MAX as usize, 0));
    }
}
