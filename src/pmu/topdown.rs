//! Top-down level 1 from Intel's fixed counter 3 (TOPDOWN.SLOTS) and IA32_PERF_METRICS: how the
//! pipeline's issue slots were spent, accumulated per category at 64 bits.
//!
//! IA32_PERF_METRICS holds four 8-bit fractions (of 0xFF) of the slots fixed counter 3 counted since
//! both were last zeroed. So every read takes both, splits the slots by the fractions and zeroes both,
//! as Linux does (`arch/x86/events/intel/core.c`, `intel_pmu_update_topdown_event`: each metric's slots
//! are `slots * fraction / 0xff`, then fixed counter 3 and PERF_METRICS are written 0, in that order).
//! Zeroed at every read, fixed counter 3 cannot wrap between two: at 48 bits and at most 8 slots per
//! cycle at 6 GHz it lasts about 5,800 s, and the session reads at least every 10 minutes while it
//! owns the counters (it releases them after that long without a reader). Slots counted between the
//! read and the zeroing (a few instructions) are lost.

use super::events::Event;
use super::msr;
use super::placement::{RDPMC_FIXED, RDPMC_PERF_METRICS};
use super::program::Msrs;

/// The four level-1 categories, in IA32_PERF_METRICS byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Retiring,
    BadSpeculation,
    FrontendBound,
    BackendBound,
}

impl Category {
    #[cfg(test)]
    pub const ALL: [Category; 4] =
        [Category::Retiring, Category::BadSpeculation, Category::FrontendBound, Category::BackendBound];
}

/// Top-down slot totals of one processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Topdown {
    /// All slots (fixed counter 3).
    pub slots: u64,
    /// Each [`Category`]'s share of them, indexed by `Category as usize`.
    pub categories: [u64; 4],
}

/// `slots` split by the four fractions of an IA32_PERF_METRICS value.
pub fn split(slots: u64, metrics: u64) -> [u64; 4] {
    core::array::from_fn(|byte| {
        let fraction = (metrics >> (8 * byte)) & 0xFF;
        // Cannot overflow: fixed counter 3 is at most 48 bits wide and a fraction 8.
        (slots & ((1 << 56) - 1)) * fraction / 0xFF
    })
}

/// Top-down level 1 from the totals of the topdown profile's input events, on processors without
/// IA32_PERF_METRICS, with `width` issue slots per cycle. The level 1 formulas of Linux's
/// `tools/perf/pmu-events` (Intel 4-wide cores, e.g. skylake `tma_*`: slots = 4 x
/// CPU_CLK_UNHALTED.THREAD, retiring = UOPS_RETIRED.RETIRE_SLOTS, bad speculation = UOPS_ISSUED.ANY -
/// UOPS_RETIRED.RETIRE_SLOTS + 4 x INT_MISC.RECOVERY_CYCLES, frontend bound =
/// IDQ_UOPS_NOT_DELIVERED.CORE, backend bound the rest; AMD amdzen4/amdzen5 pipeline utilisation with
/// de_src_op_disp.all, ex_ret_ops and de_no_dispatch_per_slot.no_ops_from_frontend, where backend
/// bound, as the rest, also holds the slots lost to the other SMT thread). The non-SMT Intel formulas:
/// with Hyper-Threading on, a thread's slots are an approximation.
pub fn from_events(width: u8, count: impl Fn(Event) -> u64) -> Topdown {
    let width = u64::from(width);
    let slots = count(Event::CoreCycles).wrapping_mul(width);
    let retiring = count(Event::SlotsRetired);
    let bad_speculation = count(Event::SlotsIssued)
        .saturating_sub(retiring)
        .saturating_add(count(Event::RecoveryCycles).saturating_mul(width));
    let frontend = count(Event::SlotsNotDelivered);
    let backend = slots.saturating_sub(retiring.saturating_add(bad_speculation).saturating_add(frontend));
    Topdown { slots, categories: [retiring, bad_speculation, frontend, backend] }
}

/// Reads fixed counter 3 and IA32_PERF_METRICS on this processor, zeroes both and returns the slots
/// counted since the last read, split by category: the caller adds them to its totals (the driver
/// keeps them in the processor's published block). Only while a plan with
/// [`crate::pmu::placement::CounterPlan::topdown_metrics`] is programmed.
pub fn read_and_zero(msrs: &mut impl Msrs) -> Topdown {
    let slots = msrs.read_counter(msr::IA32_FIXED_CTR3, Some(RDPMC_FIXED | 3));
    let metrics = msrs.read_counter(msr::IA32_PERF_METRICS, Some(RDPMC_PERF_METRICS));
    msrs.write(msr::IA32_FIXED_CTR3, 0);
    msrs.write(msr::IA32_PERF_METRICS, 0);
    Topdown { slots, categories: split(slots, metrics) }
}

impl Topdown {
    /// These totals plus `more`, each wrapping at 64 bits.
    pub fn plus(&self, more: &Topdown) -> Topdown {
        Topdown {
            slots: self.slots.wrapping_add(more.slots),
            categories: core::array::from_fn(|category| {
                self.categories[category].wrapping_add(more.categories[category])
            }),
        }
    }
}

#[cfg(test)]
#[path = "topdown_tests.rs"]
mod tests;
