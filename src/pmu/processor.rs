//! One processor's counting state.

use super::fold::ProcessorCounters;
use super::frequency::FrequencyCounters;
use super::hybrid::CoreType;
use super::poll::PollCounters;
use super::topdown::TopdownCounters;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// One processor's state: the overflow counts and reported values, the polling state used when
/// there is no overflow interrupt, the top-down totals and the last APERF/MPERF readings. Cache-line aligned so processors never share a line. All zero is
/// "nothing counted yet" (the pool hands it out zeroed).
#[repr(C, align(64))]
#[derive(Default)]
pub struct PerProcessor {
    pub counters: ProcessorCounters,
    pub poll: PollCounters,
    pub topdown: TopdownCounters,
    pub frequency: FrequencyCounters,
    /// Which programming check the next collect makes (they take turns: one rdmsr per collect).
    pub check_turn: AtomicUsize,
    /// The processor's [`CoreType`], as a number: set once at load, before the state is shared.
    core_type: AtomicU8,
}

impl PerProcessor {
    pub fn set_core_type(&self, core_type: CoreType) {
        self.core_type.store(core_type as u8, Ordering::Relaxed);
    }

    /// The processor's [`CoreType`] as the Core Type counters show it.
    pub fn core_type(&self) -> u8 {
        self.core_type.load(Ordering::Relaxed)
    }

    /// The programming check for this read, of `checks` in all, and the next for the next: the turns
    /// go round without a division (a turn left over from a programming with more checks restarts at
    /// 0).
    pub fn next_check(&self, checks: usize) -> usize {
        let turn = self.check_turn.load(Ordering::Relaxed);
        let turn = if turn < checks { turn } else { 0 };
        self.check_turn.store(turn + 1, Ordering::Relaxed);
        turn
    }
}

const _: () = assert!(core::mem::size_of::<PerProcessor>() <= 512, "at most 512 bytes per processor");

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn programming_checks_go_round_and_restart_when_there_are_fewer() {
        let processor = PerProcessor::default();
        let turns: Vec<usize> = (0..7).map(|_| processor.next_check(3)).collect();
        assert_eq!(turns, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(processor.next_check(6), 1);
        assert_eq!(processor.next_check(1), 0, "a turn past a shorter programming restarts");
        assert_eq!(processor.next_check(1), 0);
        assert_eq!(processor.next_check(0), 0, "no checks: turn 0, which checks nothing");
    }
}
