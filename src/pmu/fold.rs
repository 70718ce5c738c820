//! Per-processor overflow counts, the overflow-handler fold and the read protocol that turns them and
//! the hardware into exact 64-bit counts.
//!
//! Model-check the protocol (handler, hardware and reader racing) with loom; the models live in
//! `fold_loom_tests.rs` and `poll_loom_tests.rs` and are compiled only with `--cfg loom`, which is
//! meant for the library's unit tests only (loom is a dev-dependency):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib pmu::fold
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --lib pmu::poll
//! ```
//!
//! The first builds in about a minute and checks in about 10 s (290,000 schedules with at most 4
//! preemptions, three tests: the protocol, and two broken protocols loom must catch); the second
//! checks its model exhaustively in about 2 s. Plain `cargo test` compiles none of it.
//!
//! # Who touches what
//!
//! Everything in a [`ProcessorCounters`] belongs to one processor. Three kinds of code use it:
//!
//! - the **overflow handler** ([`ProcessorCounters::fold`]), which the HAL calls at PROFILE_LEVEL on
//!   the processor that overflowed with the IA32_PERF_GLOBAL_STATUS bits, and which clears those status
//!   bits itself after the handler returns;
//! - **readers** on the same processor: inside an all-processor IPI (IPI_LEVEL 14, which on x64 is below
//!   PROFILE_LEVEL 15: the PMI can interrupt it) or
//!   from a DPC (DISPATCH_LEVEL, the PMI can interrupt it anywhere; and an IPI reader can interrupt a
//!   DPC reader);
//! - **collectors** on any processor, which read the published values ([`ProcessorCounters::snapshot`])
//!   after the all-processor call returns.
//!
//! Only code running on the owning processor writes, and code on one processor interleaves only by
//! interrupting: an interrupt runs to completion between two instructions of what it interrupts. Every
//! field is one `AtomicU64`, so nothing can be torn, and every read-modify-write that an interrupt could
//! split is an atomic one (`lock add`, or `fetch_max`'s compare-exchange).
//!
//! # The read protocol
//!
//! With N(t) the wraps of a counter up to time t, O(t) the overflow count the handler has folded and
//! S(t) its status bit, N = O + S whenever the handler is not running, because the hardware sets S when
//! the counter wraps and the handler's fold (O += 1) and the HAL's clear (S = 0) happen together as far
//! as an interrupted reader can tell. One attempt of [`ProcessorCounters::read_extended`] is
//!
//! ```text
//! o1 = O; s1 = S (status MSR); raw = counter MSR; s2 = S (status MSR); o2 = O
//! accept if o1 == o2 && s1 == s2: value = extend(o1, raw, s1, W) = (o1 + s1) * 2^W + raw
//! ```
//!
//! *Why an accepted attempt is exact at the instant raw was read.* O only grows during a session
//! ([`ProcessorCounters::acquire`] resets it before the counters start), so o1 == o2 means no
//! handler run for this counter between the two loads. Without the handler S only goes from 0 to 1 (a
//! wrap), so s1 == s2 means S was constant from s1 to s2, around the raw read. If it was 0, no wrap
//! happened in that window and N = o1 at the raw read; if it was 1, the one wrap it records happened
//! before s1 (the counter cannot wrap again, 2^W events later, before its interrupt is handled) and
//! N = o1 + 1. Either way the value is N * 2^W + raw, the exact count when raw was read.
//!
//! *Why both re-checks are needed.* Without o1 == o2, a PMI between o1 and s1 (O += 1, S cleared)
//! yields o1 + 0 wraps: 2^W short. Without s2 (the shorter `o1, status, raw, o2`), a wrap between the
//! status read and the raw read whose PMI arrives only after o2 yields a post-wrap raw with the
//! pre-wrap wrap count: 2^W short again, and the next read jumps back up. Both broken variants are in
//! the loom tests, which must (and do) find these schedules.
//!
//! *How many attempts.* A rejected attempt needs a wrap or a handler run of that counter inside it, a
//! few hundred cycles, while wraps are 2^W events apart; each wrap can therefore spoil at most two
//! attempts (its own, and its interrupt's), so three attempts always suffice (two where the PMI cannot
//! interrupt the reader; the driver's IPI reader runs at IPI_LEVEL, below PROFILE_LEVEL on x64, so it
//! can); [`DEFAULT_MAX_ATTEMPTS`] is 4. When every attempt is rejected anyway (a
//! broken hypervisor PMU, say), [`ProcessorCounters::read_counter`] reports the last value again and
//! counts the fallback, instead of looping at raised IRQL.
//!
//! Assumptions, beyond the HAL's contract: the hardware sets the status bit in the same step as the wrap
//! (no read sees the wrapped value without the bit); the HAL clears exactly the status bits it passed to
//! the handler; and the compiler keeps the MSR reads between the two overflow loads. For that the
//! closures' `rdmsr` must be an `asm!` block with neither `nomem` nor `readonly`: a block declared not
//! to touch memory is not a memory operation, so neither the compiler fences
//! [`ProcessorCounters::read_extended`] puts around the closures nor any atomic ordering keeps a load
//! from moving across it.
//!
//! # Memory orderings
//!
//! The handler and the readers of one processor share one instruction stream (interrupts are precise),
//! so the protocol needs no hardware ordering: the fold is a `Relaxed` `lock add`, and the overflow
//! loads are `Relaxed` (plain moves on x64). Coherence of the single cell is what `o1 == o2` relies on.
//! Collectors on other processors see published values through `publish`'s `Release` increment of the
//! generation and `snapshot`'s `Acquire` load of it.
//!
//! # Memory
//!
//! `ProcessorCounters` is 256 bytes (224 used, aligned to 64 so that processors never share a cache
//! line): overflow counts 64, invocation count 8, retries/fallbacks/generation 24, bases 64, published
//! values 64. Overflow counts are kept per owned counter, not per status bit ([AtomicU64; 64] alone
//! would be 512 bytes): the slot of status bit b is its rank among the owned bits (the number of owned
//! bits below b), which the handler computes with a popcount instead of a table lookup.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering};

use core::sync::atomic::compiler_fence;

use super::extend::extend;

/// Counters a processor can own at once, and so the number of slots in every per-counter array: one
/// per assignment a counter plan can make (a plan's slot index is an index here).
pub const SLOTS: usize = super::events::MAX_ASSIGNMENTS;
const _: () = assert!(SLOTS <= 64, "an OwnedMask has one bit per owned counter");

/// Attempts [`ProcessorCounters::read_counter`] callers should allow (see the module comment: two
/// always suffice with the PMI masked, three with it enabled).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;

/// The IA32_PERF_GLOBAL_STATUS bits (GP counter i = bit i, fixed counter j = bit 32 + j; on AMD
/// PerfMonV2 core counter i = bit i) of the counters this session owns: at most [`SLOTS`] of them.
/// Fixed for a session; the handler and the readers must use the same mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedMask(u64);

impl OwnedMask {
    /// No counters.
    pub const EMPTY: OwnedMask = OwnedMask(0);

    /// The mask of `bits`, or `None` if it has more than [`SLOTS`] bits set.
    pub const fn new(bits: u64) -> Option<OwnedMask> {
        if bits.count_ones() as usize <= SLOTS { Some(OwnedMask(bits)) } else { None }
    }

    /// The status bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The overflow slot of status bit `bit`: its rank among the owned bits, or `None` if not owned.
    pub const fn slot_of(self, bit: u8) -> Option<usize> {
        if bit >= 64 {
            return None;
        }
        let single = 1u64 << bit;
        if self.0 & single == 0 { None } else { Some(rank(self.0, single)) }
    }
}

/// The number of owned bits below the single bit `single` (which must be non-zero to mean anything;
/// 0 gives the count of every owned bit). Always below [`SLOTS`] for an owned bit of an [`OwnedMask`].
#[inline(always)]
const fn rank(owned: u64, single: u64) -> usize {
    (owned & single.wrapping_sub(1)).count_ones() as usize
}

/// Where a counter is in this session: its status bit among the session's owned counters, and its width
/// (CPUID.0AH reports GP and fixed counter widths separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub owned: OwnedMask,
    /// IA32_PERF_GLOBAL_STATUS bit: GP counter i = i, fixed counter j = 32 + j.
    pub bit: u8,
    pub width: u8,
}

/// An accepted read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extended {
    /// The counter's 64-bit value (overflow count and raw value combined; no base).
    pub value: u64,
    /// Attempts used, 1 when nothing raced with the read.
    pub attempts: u32,
}

/// Why [`ProcessorCounters::read_extended`] returned no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The status bit is not in the session's [`OwnedMask`].
    NotOwned,
    /// Every one of `attempts` attempts raced with a wrap or an overflow interrupt.
    Unstable { attempts: u32 },
}

/// What collectors read: one processor's published values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// How many times the owner published; values are at least as new as that publication.
    pub generation: u64,
    /// The reported (base + extended, monotonic) value of each logical counter.
    pub values: [u64; SLOTS],
    /// Overflow handler invocations on this processor, ever.
    pub overflow_interrupts: u64,
    /// Read attempts that had to be repeated.
    pub read_retries: u64,
    /// Reads that gave up and reported the previous value.
    pub read_fallbacks: u64,
}

/// One processor's overflow counts, reported values and statistics. See the module comment.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct ProcessorCounters {
    /// Wraps delivered by the overflow handler in this session, per slot ([`OwnedMask::slot_of`]).
    overflows: [AtomicU64; SLOTS],
    /// Overflow handler invocations, ever.
    overflow_interrupts: AtomicU64,
    read_retries: AtomicU64,
    read_fallbacks: AtomicU64,
    generation: AtomicU64,
    /// Per logical counter: the total of closed sessions (the last value reported before [`Self::release`]).
    base: [AtomicU64; SLOTS],
    /// Per logical counter: the last value reported, which collectors read.
    reported: [AtomicU64; SLOTS],
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<ProcessorCounters>() <= 512);

impl ProcessorCounters {
    /// All zero: no overflow, no session closed, nothing reported.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        ProcessorCounters {
            overflows: [const { AtomicU64::new(0) }; SLOTS],
            overflow_interrupts: AtomicU64::new(0),
            read_retries: AtomicU64::new(0),
            read_fallbacks: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            base: [const { AtomicU64::new(0) }; SLOTS],
            reported: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    /// All zero (loom's atomics have no `const fn new`).
    #[cfg(loom)]
    pub fn new() -> Self {
        ProcessorCounters {
            overflows: core::array::from_fn(|_| AtomicU64::new(0)),
            overflow_interrupts: AtomicU64::new(0),
            read_retries: AtomicU64::new(0),
            read_fallbacks: AtomicU64::new(0),
            generation: AtomicU64::new(0),
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
            // rank < SLOTS for an owned bit; the mask only lets the compiler drop the bounds check.
            let slot = rank(owned.0, lowest) & (SLOTS - 1);
            self.overflows[slot].fetch_add(1, Ordering::Relaxed);
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

    /// Before a session starts (counters stopped): each slot's base and reported value become `totals`
    /// (the totals of the events the new session places there).
    pub fn rebase(&self, totals: [u64; SLOTS]) {
        for ((base, reported), total) in self.base.iter().zip(&self.reported).zip(totals) {
            base.store(total, Ordering::Relaxed);
            reported.store(total, Ordering::Relaxed);
        }
    }

    /// Ends a session: the caller has stopped the counters, read each one a final time
    /// ([`Self::read_counter`]) and cleared their status bits. Each counter's last reported value
    /// becomes its base, so the next session continues from it.
    pub fn release(&self) {
        for (base, reported) in self.base.iter().zip(&self.reported) {
            base.store(reported.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Reads the counter at `at` with the protocol of the module comment: at most `max_attempts`
    /// attempts, each calling `read_status` (IA32_PERF_GLOBAL_STATUS, or AMD's PerfCntrGlobalStatus)
    /// twice and `read_raw` (the counter) once. Exact for the instant of the accepted `read_raw`;
    /// read-only, so any reader may interrupt another.
    #[inline]
    pub fn read_extended<S, R>(
        &self,
        at: Placement,
        max_attempts: u32,
        mut read_status: S,
        mut read_raw: R,
    ) -> Result<Extended, ReadError>
    where
        S: FnMut() -> u64,
        R: FnMut() -> u64,
    {
        let Some(slot) = at.owned.slot_of(at.bit) else {
            return Err(ReadError::NotOwned);
        };
        let overflows = &self.overflows[slot & (SLOTS - 1)];
        let status_bit = 1u64 << (at.bit & 63);
        let mut attempts = 0;
        while attempts < max_attempts {
            attempts += 1;
            let o1 = overflows.load(Ordering::Relaxed);
            compiler_fence(core::sync::atomic::Ordering::SeqCst);
            let s1 = read_status() & status_bit;
            let raw = read_raw();
            let s2 = read_status() & status_bit;
            compiler_fence(core::sync::atomic::Ordering::SeqCst);
            let o2 = overflows.load(Ordering::Relaxed);
            if o1 == o2 && s1 == s2 {
                return Ok(Extended { value: extend(o1, raw, s1 != 0, at.width), attempts });
            }
        }
        Err(ReadError::Unstable { attempts })
    }

    /// Reads logical counter `counter` (0..[`SLOTS`]), which this session placed `at`, and reports it:
    /// base + extended value, never below the previous report, stored for collectors. When the read
    /// is unstable it reports the previous value again and counts a fallback. `None` when `counter` is
    /// out of range; an unowned status bit counts as a fallback.
    #[inline]
    pub fn read_counter<S, R>(
        &self,
        counter: usize,
        at: Placement,
        max_attempts: u32,
        read_status: S,
        read_raw: R,
    ) -> Option<u64>
    where
        S: FnMut() -> u64,
        R: FnMut() -> u64,
    {
        let reported = self.reported.get(counter)?;
        match self.read_extended(at, max_attempts, read_status, read_raw) {
            Ok(read) => {
                if read.attempts > 1 {
                    self.read_retries.fetch_add(u64::from(read.attempts - 1), Ordering::Relaxed);
                }
                self.report(counter, read.value)
            }
            Err(_) => {
                self.read_fallbacks.fetch_add(1, Ordering::Relaxed);
                Some(reported.load(Ordering::Relaxed))
            }
        }
    }

    /// Reports `extended`, the current session's 64-bit value of logical counter `counter` (from
    /// [`Self::read_extended`] or crate::pmu::poll): stores and returns `base + extended`, or the
    /// previous report if that is larger. `None` when `counter` is out of range.
    ///
    /// The store is a `fetch_max` (a compare-exchange loop on x64) because an IPI reader can interrupt
    /// a DPC reader between a load and a store; the loop repeats only when such an interrupt wrote the
    /// cell in between, so at most once per nested reader.
    #[inline]
    pub fn report(&self, counter: usize, extended: u64) -> Option<u64> {
        let base = self.base.get(counter)?.load(Ordering::Relaxed);
        let value = base.wrapping_add(extended);
        let previous = self.reported.get(counter)?.fetch_max(value, Ordering::Relaxed);
        Some(if previous > value { previous } else { value })
    }

    /// Makes everything reported so far visible to collectors that then call [`Self::snapshot`]; the
    /// owner calls it once per collect, after reading its counters.
    pub fn publish(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The published values, for a collector on any processor. Each value is one atomic load (never
    /// torn) and at least as new as the publication `generation` counts; values reported after it may
    /// already show.
    pub fn snapshot(&self) -> Snapshot {
        let generation = self.generation.load(Ordering::Acquire);
        let mut values = [0; SLOTS];
        for (value, reported) in values.iter_mut().zip(&self.reported) {
            *value = reported.load(Ordering::Relaxed);
        }
        Snapshot {
            generation,
            values,
            overflow_interrupts: self.overflow_interrupts.load(Ordering::Relaxed),
            read_retries: self.read_retries.load(Ordering::Relaxed),
            read_fallbacks: self.read_fallbacks.load(Ordering::Relaxed),
        }
    }

    /// Overflow handler invocations on this processor, ever.
    pub fn overflow_interrupts(&self) -> u64 {
        self.overflow_interrupts.load(Ordering::Relaxed)
    }

    /// Overflows delivered to `slot` in this session (`None` when out of range).
    pub fn overflows(&self, slot: usize) -> Option<u64> {
        Some(self.overflows.get(slot)?.load(Ordering::Relaxed))
    }
}

impl Default for ProcessorCounters {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
#[path = "fold_tests.rs"]
mod tests;

#[cfg(all(test, loom))]
#[path = "fold_loom_tests.rs"]
mod loom_tests;
