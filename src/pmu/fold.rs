//! Per-processor overflow counts, the overflow-handler fold and the read protocol that turns them and
//! the hardware into exact 64-bit counts.
//!
//! The read runs with interrupts held off, so the handler and the reader never interleave; the tests
//! (`fold/tests.rs`) place a wrap, and its interrupt, at every point of a read instead. The polling
//! reader, which runs with interrupts enabled, is model-checked with loom (`poll/loom_tests.rs`).
//!
//! Who touches what, why the read is exact, the memory orderings and the memory: `docs/pmu.md`.

use crate::sync::{AtomicU64, Ordering};

use super::extend::{counter_mask, extend_with};
use core::num::NonZeroU64;

/// Counters a processor can own at once, and so the number of reported values and bases it keeps:
/// one per assignment a counter plan can make (a plan's assignment index is the counter's index here), and
/// one for fixed counter 3 (top-down slots), whose wraps the overflow handler counts in the counter
/// after the plan's (its status bit, 35, is above every assignment's: [`OwnedMask::rank_of`]).
pub const COUNTERS: usize = super::placement::MAX_ASSIGNMENTS + 1;
/// The size of the tables indexed by counter where a counter is masked rather than bounds-tested (the
/// overflow counts, which the handler indexes, and a session's read tables): [`COUNTERS`] rounded up to
/// a power of two, so that `counter & (TABLE - 1)` is always in range.
pub const TABLE: usize = COUNTERS.next_power_of_two();
const _: () = assert!(COUNTERS <= 64, "an OwnedMask has one bit per owned counter");

/// The IA32_PERF_GLOBAL_STATUS bits (GP counter i = bit i, fixed counter j = bit 32 + j; on AMD
/// PerfMonV2 core counter i = bit i) of the counters this session owns: at most [`COUNTERS`] of them.
/// Fixed for a session; the handler and the readers must use the same mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedMask(u64);

impl OwnedMask {
    /// No counters.
    pub const EMPTY: OwnedMask = OwnedMask(0);

    /// The mask of `bits`, or `None` if it has more than [`COUNTERS`] bits set.
    pub const fn new(bits: u64) -> Option<OwnedMask> {
        if bits.count_ones() as usize <= COUNTERS { Some(OwnedMask(bits)) } else { None }
    }

    /// The status bits, to be kept in an atomic and made a mask again with [`OwnedMask::from_bits`].
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The mask whose [`OwnedMask::bits`] these are (the overflow handler's path: no count check,
    /// since the bits came from a checked mask; a counter is masked into range anyway, `fold`).
    #[inline(always)]
    pub const fn from_bits(bits: u64) -> OwnedMask {
        OwnedMask(bits)
    }

    /// The overflow rank of status bit `bit`: its rank among the owned bits, or `None` if not owned.
    pub const fn rank_of(self, bit: u8) -> Option<usize> {
        if bit >= 64 {
            return None;
        }
        let single = 1u64 << bit;
        if self.0 & single == 0 { None } else { Some(rank(self.0, single)) }
    }
}

/// The number of owned bits below the single bit `single` (which must be non-zero to mean anything;
/// 0 gives the count of every owned bit). Always below [`COUNTERS`] for an owned bit of an [`OwnedMask`].
#[inline(always)]
const fn rank(owned: u64, single: u64) -> usize {
    (owned & single.wrapping_sub(1)).count_ones() as usize
}

/// Where a counter is in this session: its overflow rank (its status bit's rank among the session's
/// owned counters, [`OwnedMask::rank_of`], worked out once per session), its status bit, and its
/// width (CPUID.0AH reports GP and fixed counter widths separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub rank: usize,
    /// The counter's IA32_PERF_GLOBAL_STATUS bit, as a mask: GP counter i = bit i, fixed counter
    /// j = bit 32 + j. Never zero, which lets an `Option<Placement>` keep its `None` there.
    status_bit: NonZeroU64,
    /// The raw value's mask (the width, [`crate::pmu::extend::counter_mask`]), worked out once so that
    /// each read's extension is a multiplication, a mask and an add.
    mask: u64,
    /// `mask + 1`: 2^W (0 for W = 64, where `n * 2^64` is 0 modulo 2^64).
    wrap: u64,
}

impl Placement {
    /// The placement of the counter with status bit `bit` and width `width`, if `owned` has it.
    pub const fn new(owned: OwnedMask, bit: u8, width: u8) -> Option<Placement> {
        match owned.rank_of(bit) {
            Some(rank) => {
                let mask = counter_mask(width);
                // 1 << n is never zero: the `else` is never taken.
                let Some(status_bit) = NonZeroU64::new(1u64 << (bit & 63)) else { return None };
                Some(Placement { rank, status_bit, mask, wrap: mask.wrapping_add(1) })
            }
            None => None,
        }
    }

    /// The extension of this counter's `raw` ([`crate::pmu::extend::extend_with`]).
    #[inline(always)]
    const fn extend(&self, overflows: u64, raw: u64, pending: bool) -> u64 {
        extend_with(overflows, raw, pending, self.mask, self.wrap)
    }
}

/// The placements of a plan whose every counter is its own overflow rank, field by field: a reader
/// indexes each field by the counter alone (one index register for every array it walks, where a
/// 32-byte [`Placement`] needs a second one) and keeps no counter numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnRankPlacements {
    status_bits: [NonZeroU64; TABLE],
    masks: [u64; TABLE],
    wraps: [u64; TABLE],
}

impl OwnRankPlacements {
    /// No counter's placement set: every place is a 64-bit counter on status bit 0 (for a table
    /// whose counters have no placement, which nothing reads).
    pub const UNSET: Self = OwnRankPlacements {
        status_bits: [NonZeroU64::MIN; TABLE],
        masks: [u64::MAX; TABLE],
        wraps: [0; TABLE],
    };

    /// Every counter's placement from `placement` (the places a plan does not fill are never read).
    pub const fn filled_with(placement: Placement) -> Self {
        OwnRankPlacements {
            status_bits: [placement.status_bit; TABLE],
            masks: [placement.mask; TABLE],
            wraps: [placement.wrap; TABLE],
        }
    }

    /// Sets counter `counter`'s placement: `false` (nothing set) if `placement` is another counter's.
    pub fn set(&mut self, counter: usize, placement: Placement) -> bool {
        if placement.rank != counter || counter >= TABLE {
            return false;
        }
        self.status_bits[counter] = placement.status_bit;
        self.masks[counter] = placement.mask;
        self.wraps[counter] = placement.wrap;
        true
    }

    /// Sets counter `counter`'s width alone, with no placement (a counter polled, or whose status
    /// bit the session does not own): [`Self::width`] gives it back.
    pub fn set_width(&mut self, counter: usize, width: u8) {
        if counter < TABLE {
            self.masks[counter] = counter_mask(width);
            self.wraps[counter] = self.masks[counter].wrapping_add(1);
        }
    }

    /// Counter `counter`'s width (of its placement, or as [`Self::set_width`] set it), clamped as
    /// [`crate::pmu::extend::counter_mask`] clamps it.
    pub fn width(&self, counter: usize) -> u8 {
        (u64::BITS - self.masks[counter & (TABLE - 1)].leading_zeros()) as u8
    }

    /// Counter `counter`'s placement.
    #[inline(always)]
    pub fn get(&self, counter: usize) -> Placement {
        let index = counter & (TABLE - 1);
        Placement {
            rank: counter,
            status_bit: self.status_bits[index],
            mask: self.masks[index],
            wrap: self.wraps[index],
        }
    }
}

/// One processor's reported values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The reported (base + extended, monotonic) value of each logical counter.
    pub values: [u64; COUNTERS],
    /// Overflow handler invocations on this processor, ever.
    pub overflow_interrupts: u64,
}

/// One processor's overflow counts, reported values and statistics. See the module comment.
#[repr(C)]
#[derive(Debug)]
pub struct ProcessorCounters {
    /// Wraps delivered by the overflow handler in this session, per counter ([`OwnedMask::rank_of`]); in
    /// a polled session (no overflow handler), the polled values ([`Self::session_cells`]). [`TABLE`]
    /// of them, so that the handler masks a counter into range instead of testing it.
    overflows: [AtomicU64; TABLE],
    /// Overflow handler invocations, ever.
    overflow_interrupts: AtomicU64,
    /// Per logical counter: the total of closed sessions (the last value reported before [`Self::release`]).
    base: [AtomicU64; COUNTERS],
    /// Per logical counter: the last value reported, which collectors read.
    reported: [AtomicU64; COUNTERS],
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<ProcessorCounters>() <= 512);

impl ProcessorCounters {
    /// All zero: no overflow, no session closed, nothing reported.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        ProcessorCounters {
            overflows: [const { AtomicU64::new(0) }; TABLE],
            overflow_interrupts: AtomicU64::new(0),
            base: [const { AtomicU64::new(0) }; COUNTERS],
            reported: [const { AtomicU64::new(0) }; COUNTERS],
        }
    }

    /// All zero (loom's atomics have no `const fn new`).
    #[cfg(loom)]
    pub fn new() -> Self {
        ProcessorCounters {
            overflows: core::array::from_fn(|_| AtomicU64::new(0)),
            overflow_interrupts: AtomicU64::new(0),
            base: core::array::from_fn(|_| AtomicU64::new(0)),
            reported: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The overflow handler's work, for the status bits `overflow_bits` the HAL passed: one more
    /// overflow for each owned counter whose bit is set (other bits are ignored), and one more
    /// invocation. No call, no lock, no branch besides the loop over set bits: per set bit a lowest-bit
    /// isolation, a popcount (its inline bit-twiddling form on x64 without `popcnt`), one `lock inc`;
    /// 25 instructions per set bit plus about 15 once in an x64 release build, and no panic path.
    #[inline(always)]
    pub fn fold(&self, overflow_bits: u64, owned: OwnedMask) {
        self.overflow_interrupts.fetch_add(1, Ordering::Relaxed);
        let mut pending = overflow_bits & owned.0;
        while pending != 0 {
            let lowest = pending & pending.wrapping_neg();
            // rank < COUNTERS for an owned bit; the mask only lets the compiler drop the bounds check.
            let index = rank(owned.0, lowest) & (TABLE - 1);
            self.overflows[index].fetch_add(1, Ordering::Relaxed);
            pending ^= lowest;
        }
    }

    /// Starts a session: the caller has written 0 to the counters and not yet enabled them or their
    /// overflow interrupt. Overflow counts restart at 0; bases and reported values carry on.
    pub fn acquire(&self) {
        for overflows in &self.overflows {
            overflows.store(0, Ordering::Relaxed);
        }
    }

    /// Before a session starts (counters stopped): each counter's base and reported value become `totals`
    /// (the totals of the events the new session places there).
    pub fn rebase(&self, totals: [u64; COUNTERS]) {
        for ((base, reported), total) in self.base.iter().zip(&self.reported).zip(totals) {
            base.store(total, Ordering::Relaxed);
            reported.store(total, Ordering::Relaxed);
        }
    }

    /// Ends a session: the caller has stopped the counters, read each one a final time
    /// ([`Self::report_held`]) and cleared their status bits. Each counter's last reported value
    /// becomes its base, so the next session continues from it.
    pub fn release(&self) {
        for (base, reported) in self.base.iter().zip(&self.reported) {
            base.store(reported.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// A repair's restart of logical counter `counter`, whose hardware counter was stopped at `raw`
    /// and goes on from there, with the session's per-counter cells restarted (overflow counts from 0,
    /// or polled values from `raw`): the base becomes the last report less `raw`, so that the counter
    /// at `raw` reads as the last report and each later event adds one (modulo 2^64, like every
    /// base; see crate::pmu::extend).
    pub fn rebase_at(&self, counter: usize, raw: u64) {
        if let (Some(base), Some(reported)) = (self.base.get(counter), self.reported.get(counter)) {
            base.store(reported.load(Ordering::Relaxed).wrapping_sub(raw), Ordering::Relaxed);
        }
    }

    /// Reports logical counter `counter` (0..[`COUNTERS`]), which this session placed `at`, from `raw`, the
    /// counter read with interrupts held off, and `status`, the global status register read after it;
    /// `read_again` reads the counter again, and is called only when `status` has its bit set (the
    /// protocol of the module comment): base + exact 64-bit value, never below the previous report.
    /// `None` when `counter` is out of range.
    #[inline(always)]
    pub fn report_held(
        &self,
        counter: usize,
        at: Placement,
        raw: u64,
        status: u64,
        read_again: impl FnOnce() -> u64,
    ) -> Option<u64> {
        let overflows = self.overflows[at.rank & (TABLE - 1)].load(Ordering::Relaxed);
        let pending = status & at.status_bit.get() != 0;
        let raw = if pending {
            // A wrap pending between the read and the status read: rare, so kept out of the loop's
            // straight line.
            core::hint::cold_path();
            read_again()
        } else {
            raw
        };
        self.report_uninterrupted(counter, at.extend(overflows, raw, pending))
    }

    /// [`Self::report`] for a reader that nothing can interrupt on this processor (interrupts held
    /// off, as [`Self::report_held`]'s caller is): a load, a compare and a store, with no
    /// compare-exchange loop. The only other writer of the cell is the polling reader on this same
    /// processor, whose `fetch_max` retries if this store lands inside its loop; no other processor
    /// writes it.
    #[inline(always)]
    fn report_uninterrupted(&self, counter: usize, extended: u64) -> Option<u64> {
        let base = self.base.get(counter)?.load(Ordering::Relaxed);
        let value = base.wrapping_add(extended);
        let reported = self.reported.get(counter)?;
        let previous = reported.load(Ordering::Relaxed);
        if value > previous {
            reported.store(value, Ordering::Relaxed);
            Some(value)
        } else {
            Some(previous)
        }
    }

    /// Reports `extended`, the current session's 64-bit value of logical counter `counter` (from
    /// [`Self::report_held`] or crate::pmu::poll): stores and returns `base + extended`, or the
    /// previous report if that is larger. `None` when `counter` is out of range.
    ///
    /// The store is a `fetch_max` (a compare-exchange loop on x64) because a reader on this processor
    /// can interrupt another between a load and a store (the polling reader runs below IPI_LEVEL); the
    /// loop repeats only when such an interrupt wrote the cell in between.
    #[inline]
    pub fn report(&self, counter: usize, extended: u64) -> Option<u64> {
        let base = self.base.get(counter)?.load(Ordering::Relaxed);
        let value = base.wrapping_add(extended);
        let previous = self.reported.get(counter)?.fetch_max(value, Ordering::Relaxed);
        Some(if previous > value { previous } else { value })
    }

    /// The reported values, for a reader on any processor: each value one atomic load (never torn).
    pub fn snapshot(&self) -> Snapshot {
        let mut values = [0; COUNTERS];
        for (value, reported) in values.iter_mut().zip(&self.reported) {
            *value = reported.load(Ordering::Relaxed);
        }
        Snapshot { values, overflow_interrupts: self.overflow_interrupts.load(Ordering::Relaxed) }
    }

    /// The published value of logical counter `counter` (0 when out of range): [`Self::snapshot`]'s for
    /// one counter, for a collector that needs only the counters of its plan.
    #[inline]
    pub fn reported(&self, counter: usize) -> u64 {
        self.reported.get(counter).map_or(0, |reported| reported.load(Ordering::Relaxed))
    }

    /// Overflow handler invocations on this processor, ever.
    pub fn overflow_interrupts(&self) -> u64 {
        self.overflow_interrupts.load(Ordering::Relaxed)
    }

    /// The per-counter cells of the session: the overflow counts of an interrupt-driven one, which a
    /// polled session (whose overflow handler folds nothing) uses for its polled values instead
    /// (crate::pmu::poll::PollCounters::over). Both start a session at 0 ([`Self::acquire`]).
    pub fn session_cells(&self) -> &[AtomicU64; TABLE] {
        &self.overflows
    }

    /// The session cell of `counter` (masked into range): for fixed counter 3, the counter after the plan's,
    /// its wraps the handler delivered since the last read zeroed it (crate::pmu::topdown).
    #[inline(always)]
    pub fn session_cell(&self, counter: usize) -> &AtomicU64 {
        &self.overflows[counter & (TABLE - 1)]
    }

    /// Overflows delivered to `counter` in this session (`None` when out of range).
    #[cfg(test)]
    pub fn overflows(&self, counter: usize) -> Option<u64> {
        Some(self.overflows.get(counter)?.load(Ordering::Relaxed))
    }
}

impl Default for ProcessorCounters {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
