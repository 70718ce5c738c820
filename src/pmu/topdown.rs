//! Top-down level 1 from Intel's fixed counter 3 (TOPDOWN.SLOTS) and IA32_PERF_METRICS: how the
//! pipeline's issue slots were spent, accumulated per category at 64 bits.
//!
//! Every read takes fixed counter 3 and IA32_PERF_METRICS with the two stopped (the other counters
//! count on), splits the slots by the register's four fractions carrying each category's remainder to
//! the next read ([`split_carrying`]), so the four totals always sum to the slots, and zeroes both.
//! Zeroed at every read, and read at least every [`MAX_READ_GAP_100NS`], fixed counter 3 does not wrap
//! between two; if it ever does (IA32_PERF_GLOBAL_STATUS bit 35, with bit 48, PERF_METRICS overflow),
//! the read counts the wrap, folds both registers into the totals, resets both and clears the bits,
//! as Linux's PMI handler does on bit 48.
//!
//! The register's semantics, why and how the read stops the counter, the remainder's bound and the
//! wrap arithmetic, with their sources: `docs/pmu.md`.

use super::events::Event;
use super::msr;
use super::placement::{RDPMC_FIXED, RDPMC_PERF_METRICS};
use super::program::Msrs;
use crate::sync::unmodelled::AtomicI16;
use crate::sync::{AtomicU64, Ordering};

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

/// A read's slots split among the four categories, carrying each category's remainder between reads
/// ([`Remainders`]).
///
/// `fractions` are the four 8-bit fractions of IA32_PERF_METRICS, at least one non-zero; `carried`
/// the remainders after the last read (start at 0). Each category's exact share of the read is
/// `slots x fraction / sum of the fractions` (the fractions sum to 0xFF, Linux's
/// `icl_get_metrics_event_value`; normalised, so that a sum off by rounding still splits every slot).
/// Counted in 1/255ths of a slot, a share plus its carried remainder is rounded down, and the slots
/// this leaves go to the largest remainders (Hamilton's largest-remainder method), so every slot of
/// the read is given to exactly one category. A category whose carried remainder is negative (given a
/// slot ahead of its share) and whose share is below one slot is given none this time, and the slot
/// comes from the category given most: no category's total ever goes back.
///
/// Returns the four categories' slots, which sum to `slots`, and the new remainders. While the
/// remainders start at 0 and come only from here, they sum to 0 and each is above -255 (so below
/// 3 x 255): every category's total is within 3 slots of the exact sum of its shares (up to 1/255
/// of a slot per read whose fractions do not sum to 0xFF, which the last category absorbs).
pub fn split_carrying(slots: u64, fractions: [u64; 4], carried: [i64; 4]) -> ([u64; 4], [i64; 4]) {
    // A read holds fixed counter 3's 48 bits and its wraps (a few at most): below 2^56, so that
    // slots x 255 fits 64 bits (and slots x 255 x 255 the 128 of an unnormalised share).
    let slots = slots & MAX_READ_SLOTS;
    let sum: u64 = fractions.iter().sum();
    let share = |fraction: u64| {
        if sum == STEP_U {
            slots * fraction
        } else {
            (u128::from(slots) * u128::from(fraction) * u128::from(STEP_U) / u128::from(sum.max(1))) as u64
        }
    };
    // Every 1/255th of the read, the last category taking what the others' rounding down leaves.
    let mut exact = [0i64; 4];
    let mut given = 0;
    for category in 0..3 {
        let units = share(fractions[category]);
        given += units;
        exact[category] = units as i64 + carried[category];
    }
    exact[3] = (slots * STEP_U - given) as i64 + carried[3];
    let mut split = exact.map(|units| units.div_euclid(STEP));
    let mut remainders = exact.map(|units| units.rem_euclid(STEP));
    let left = slots as i64 - split.iter().sum::<i64>();
    for _ in 0..left.clamp(0, 4) {
        let largest = (0..4)
            .fold(0, |best, category| if remainders[category] > remainders[best] { category } else { best });
        split[largest] += 1;
        remainders[largest] = -1;
    }
    for category in 0..4 {
        if split[category] < 0 {
            let most = (0..4).fold(0, |best, other| if split[other] > split[best] { other } else { best });
            split[most] -= 1;
            split[category] += 1;
        }
    }
    let carried = core::array::from_fn(|category| exact[category] - split[category] * STEP);
    (split.map(|slots| slots.max(0) as u64), carried)
}

/// The most slots one read splits: 2^56 - 1 (see [`split_carrying`]).
const MAX_READ_SLOTS: u64 = (1 << 56) - 1;

/// One 1/255th step of IA32_PERF_METRICS, the unit of the remainders.
const STEP: i64 = 0xFF;
const STEP_U: u64 = 0xFF;

/// One processor's carried remainders ([`split_carrying`]), in 1/255ths of a slot: each between
/// -254 and 764, so 16 bits each. Only that processor's reads touch them.
#[derive(Debug, Default)]
pub struct Remainders([AtomicI16; 4]);

impl Remainders {
    /// [`split_carrying`] with these remainders, which it moves on.
    pub fn split(&self, slots: u64, fractions: [u64; 4]) -> [u64; 4] {
        let carried = self.0.each_ref().map(|remainder| i64::from(remainder.load(Ordering::Relaxed)));
        let (split, carried) = split_carrying(slots, fractions, carried);
        for (remainder, carried) in self.0.iter().zip(carried) {
            remainder.store(carried as i16, Ordering::Relaxed);
        }
        split
    }
}

/// The four 8-bit fractions of an IA32_PERF_METRICS value, in [`Category`] order.
pub fn fractions(metrics: u64) -> [u64; 4] {
    core::array::from_fn(|byte| (metrics >> (8 * byte)) & 0xFF)
}

/// Top-down level 1 from the totals of the topdown profile's input events, on processors without
/// IA32_PERF_METRICS, with `width` issue slots per cycle (`count`: an input's total, `None` where the
/// plan does not count it). The level 1 formulas of Linux's `tools/perf/pmu-events` (Intel 4-wide
/// cores, e.g. skylake `tma_*`: slots = 4 x CPU_CLK_UNHALTED.THREAD, retiring =
/// UOPS_RETIRED.RETIRE_SLOTS, bad speculation = UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 x
/// INT_MISC.RECOVERY_CYCLES, frontend bound = IDQ_UOPS_NOT_DELIVERED.CORE, backend bound the rest;
/// AMD amdzen4/amdzen5 pipeline utilisation with de_src_op_disp.all, ex_ret_ops and
/// de_no_dispatch_per_slot.no_ops_from_frontend, where backend bound, as the rest, also holds the
/// slots lost to the other SMT thread). The non-SMT Intel formulas: with Hyper-Threading on, a
/// thread's slots are an approximation. On an Atom core (`atom`), Intel's E-core level 1
/// (intel/perfmon `E-core_TMA_Metrics.csv`): each category is its TOPDOWN_*.ALL event's slots, over
/// `#Pipeline_Width` x CPU_CLK_UNHALTED.CORE slots; bad speculation, where no event counts it
/// (Gracemont), the slots the other three leave.
pub fn from_events(width: u8, atom: bool, count: impl Fn(Event) -> Option<u64>) -> Topdown {
    let total = |event| count(event).unwrap_or(0);
    let width = u64::from(width);
    let slots = total(Event::CoreCycles).wrapping_mul(width);
    let retiring = total(Event::SlotsRetired);
    let frontend = total(Event::SlotsNotDelivered);
    if atom {
        let backend = total(Event::SlotsBackendBound);
        let known = retiring.saturating_add(frontend).saturating_add(backend);
        let bad_speculation = count(Event::SlotsBadSpeculation).unwrap_or(slots.saturating_sub(known));
        return Topdown { slots, categories: [retiring, bad_speculation, frontend, backend] };
    }
    let bad_speculation = total(Event::SlotsIssued)
        .saturating_sub(retiring)
        .saturating_add(total(Event::RecoveryCycles).saturating_mul(width));
    let backend = slots.saturating_sub(retiring.saturating_add(bad_speculation).saturating_add(frontend));
    Topdown { slots, categories: [retiring, bad_speculation, frontend, backend] }
}

/// IA32_PERF_GLOBAL_CTRL: fixed counter 3's enable (bit 32 + 3) and EN_PERF_METRICS (bit 48).
const STOP_TOPDOWN: u64 = (1 << 35) | (1 << 48);
/// IA32_PERF_GLOBAL_STATUS bit 35, fixed counter 3's overflow.
pub const SLOTS_OVERFLOW: u64 = 1 << 35;
/// IA32_PERF_GLOBAL_STATUS bit 48, PERF_METRICS overflow (Linux `GLOBAL_STATUS_PERF_METRICS_OVF_BIT`):
/// set when the slots behind IA32_PERF_METRICS overflow, after which Linux resets fixed counter 3 and
/// IA32_PERF_METRICS (`arch/x86/events/intel/core.c`, `handle_pmi_common` calling
/// `intel_pmu_update_topdown_event`).
pub const PERF_METRICS_OVERFLOW: u64 = 1 << 48;
/// Fixed counter 3's width where IA32_PERF_METRICS exists: 48 bits (CPUID.0AH:EDX\[12:5\] on every
/// such core, Ice Lake to Sapphire Rapids and the hybrid parts' performance cores).
const SLOTS_WIDTH: u32 = 48;
/// The longest gap between two reads of fixed counter 3 and IA32_PERF_METRICS while a plan counts
/// with them (the housekeeping thread reads when no consumer has for this long): 60 s, in 100 ns
/// units. At most 8 issue slots per cycle (Lion Cove; Golden Cove has 6) at 6.2 GHz, fixed counter 3
/// counts under 5 x 10^10 slots a second and wraps at 48 bits after about 5,600 s: 60 s keeps every
/// read under 1.1 % of a wrap, so the PERF_METRICS overflow of a wrapping fixed counter 3 never
/// happens while the driver owns it, and each read's 8-bit fractions (within 1/255 of the slots
/// since the last zeroing each) cover at most a minute of the workload.
pub const MAX_READ_GAP_100NS: u64 = 600_000_000;

/// Reads fixed counter 3 and IA32_PERF_METRICS on this processor with both stopped, zeroes both and
/// returns the slots counted since the last read, split by category carrying `remainders`: the caller
/// adds them to its totals (the driver keeps them in the processor's published block). Only while a
/// plan with [`crate::pmu::placement::CounterPlan::topdown_metrics`] is programmed, interrupts held
/// off. Slots that IA32_PERF_METRICS does not split (all four fractions 0: nothing counted, or the
/// split was off) are left in fixed counter 3 for a later read, as Linux leaves a read of 0 slots.
///
/// Fixed counter 3's wraps since the last read are `wraps` (the overflow handler's count of its
/// status bit, which the HAL clears after every interrupt, whichever counter raised it) and one more
/// if bit 35 is still set: each adds 2^48 slots. A set bit 35 or 48 (PERF_METRICS overflow) is cleared
/// once both registers are zeroed, and `wraps` restarts from 0.
pub fn read_and_zero(msrs: &mut impl Msrs, remainders: &Remainders, wraps: &AtomicU64) -> Topdown {
    let control = msrs.read(msr::IA32_PERF_GLOBAL_CTRL);
    msrs.write(msr::IA32_PERF_GLOBAL_CTRL, control & !STOP_TOPDOWN);
    let raw = msrs.read_counter(msr::IA32_FIXED_CTR3, Some(RDPMC_FIXED | 3));
    let fractions = fractions(msrs.read_counter(msr::IA32_PERF_METRICS, Some(RDPMC_PERF_METRICS)));
    let overflowed = msrs.read(msr::IA32_PERF_GLOBAL_STATUS) & (SLOTS_OVERFLOW | PERF_METRICS_OVERFLOW);
    let wrapped = wraps.load(Ordering::Relaxed) + u64::from(overflowed & SLOTS_OVERFLOW != 0);
    let slots = raw.wrapping_add(wrapped << SLOTS_WIDTH);
    let read = if slots == 0 || fractions == [0; 4] {
        Topdown::default()
    } else {
        msrs.write(msr::IA32_FIXED_CTR3, 0);
        msrs.write(msr::IA32_PERF_METRICS, 0);
        wraps.store(0, Ordering::Relaxed);
        if overflowed != 0 {
            core::hint::cold_path();
            msrs.write(msr::IA32_PERF_GLOBAL_OVF_CTRL, overflowed);
        }
        Topdown { slots, categories: remainders.split(slots, fractions) }
    };
    msrs.write(msr::IA32_PERF_GLOBAL_CTRL, control);
    read
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
mod tests;
