//! One processor's counting state.

use super::fold::ProcessorCounters;
use super::hybrid::CoreType;
use super::poll::PollCounters;
use super::topdown::Remainders;
use crate::sync::Ordering;
use crate::sync::unmodelled::{AtomicU8, AtomicU32};

/// One processor's PMU state: the overflow counts (or, without an overflow interrupt, the polled
/// values) and reported values and the top-down split's remainders (the top-down totals and the last APERF/MPERF
/// readings are kept where they are published, crate::block::publish). All zero is
/// "nothing counted yet" (the pool hands it out zeroed).
#[repr(C)]
#[derive(Default)]
pub struct ProcessorPmu {
    pub counters: ProcessorCounters,
    /// Which programming check the next read makes (they take turns: one rdmsr per read; see
    /// [`crate::pmu::program::Programming::intact_in_turn`], which moves it on).
    pub check_turn: AtomicU32,
    /// What each top-down category's totals owe or are owed by the reads' splits (8 bytes).
    pub topdown_remainders: Remainders,
    /// The processor's [`CoreType`], as a number: set once at load, before the state is shared.
    core_type: AtomicU8,
}

impl ProcessorPmu {
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

    /// A session's programming checks start from the first (only this processor's reads take
    /// turns).
    pub fn restart_checks(&self) {
        self.check_turn.store(0, Ordering::Relaxed);
    }
}
