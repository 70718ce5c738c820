//! Extending counters by polling, for when no overflow interrupt is available (AMD without PerfMonV2,
//! or a HAL that rejects the Overflow descriptor): every collect reads the counters, and so does a
//! low-frequency timer, often enough that no counter advances 2^W events between two reads.
//!
//! # How often
//!
//! [`advance`] is exact while fewer than 2^W events separate two reads (the counter wraps at most once
//! in between). A counter incrementing at most `max_hz` times a second therefore needs a read at least
//! every `(2^W - 1) / max_hz` seconds; [`poll_period_100ns`] divides that by a safety factor, which covers a
//! timer firing late (tick granularity, DPC latency) and an event rate above the assumed maximum.
//!
//! The assumed maximum rate is [`MAX_EVENT_HZ`]: a 6 GHz clock ([`MAX_CLOCK_HZ`]) times 8 events per
//! cycle ([`MAX_EVENTS_PER_CYCLE`], the retire width of the widest current x86 cores, e.g. 8
//! instructions per cycle; cycle counters count 1 per cycle, cache and branch events fewer than
//! instructions). With [`DEFAULT_SAFETY`] 4 a 48-bit counter is polled every 24 minutes and a 32-bit
//! one every 22 ms.
//!
//! The state, one word per counter, and why: `docs/pmu.md`.

use crate::sync::{AtomicU64, Ordering, compiler_fence};

use super::extend::{advance, counter_mask};
use super::fold::TABLE;

/// Highest clock rate assumed (Hz).
pub const MAX_CLOCK_HZ: u64 = 6_000_000_000;

/// Most events one counter counts per cycle (instructions retired on an 8-wide core).
pub const MAX_EVENTS_PER_CYCLE: u64 = 8;

/// Highest event rate assumed for any counter (events per second): 48e9.
pub const MAX_EVENT_HZ: u64 = MAX_CLOCK_HZ * MAX_EVENTS_PER_CYCLE;

/// Safety factor for [`poll_period_100ns`]: a quarter of the time a counter needs to wrap at the maximum rate.
pub const DEFAULT_SAFETY: u32 = 4;

/// The largest whole number of `units_per_second` units within which a `width`-bit counter counting at
/// most `max_hz` events per second advances less than 2^W, divided by `safety`, and at least 1.
/// `max_hz` 0 and `safety` 0 count as 1; `width` is clamped as in crate::pmu::extend.
fn period_in(width: u8, max_hz: u64, safety: u32, units_per_second: u64) -> u128 {
    let rate = if max_hz == 0 { 1 } else { max_hz };
    let safety = if safety == 0 { 1 } else { safety };
    // (2^64 - 1) * 1e9 < 2^94: no overflow in u128.
    let safe = u128::from(counter_mask(width)) * u128::from(units_per_second) / u128::from(rate);
    let period = safe / u128::from(safety);
    if period == 0 { 1 } else { period }
}

/// How often to poll a `width`-bit counter counting at most `max_hz` events per second so that it
/// never advances 2^W events between polls, with `safety` to spare: `(2^W - 1) / max_hz / safety`
/// seconds, at nanosecond resolution, never zero.
#[cfg(test)]
pub fn poll_period(width: u8, max_hz: u64, safety: u32) -> core::time::Duration {
    let nanos = period_in(width, max_hz, safety, 1_000_000_000);
    // At most (2^64 - 1) seconds (a 64-bit counter at 1 Hz), which Duration holds exactly.
    let seconds = nanos / 1_000_000_000;
    let seconds = if seconds > u128::from(u64::MAX) { u64::MAX } else { seconds as u64 };
    core::time::Duration::new(seconds, (nanos % 1_000_000_000) as u32)
}

/// The poll period (the counter's wrap time at the maximum rate over the safety factor) in 100 ns units, KeSetTimerEx's DueTime unit (negate it for a relative due time),
/// at least 1 and at most `i64::MAX`.
pub fn poll_period_100ns(width: u8, max_hz: u64, safety: u32) -> i64 {
    let ticks = period_in(width, max_hz, safety, 10_000_000);
    if ticks > i64::MAX as u128 { i64::MAX } else { ticks as i64 }
}

/// A polled counter went below its last value without wrapping: it was reset or rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAWrap;

/// One processor's polled counters: each counter's 64-bit value at its last poll (see the module
/// comment), kept in cells the processor's interrupt-driven sessions use for their overflow counts
/// (crate::pmu::fold::ProcessorCounters::session_cells): a session either polls or takes overflow
/// interrupts, and each starts its cells from 0.
#[derive(Clone, Copy, Debug)]
pub struct PollCounters<'a> {
    extended: &'a [AtomicU64; TABLE],
}

impl<'a> PollCounters<'a> {
    /// Polled counters kept in `cells`.
    pub fn over(cells: &'a [AtomicU64; TABLE]) -> Self {
        PollCounters { extended: cells }
    }

    /// Starts `counter` for a counter just written `written` (0 normally; tests start near the wrap):
    /// its 64-bit value starts at `written mod 2^W`, which must be the value the counter really holds.
    /// Returns `None` for a counter out of range.
    pub fn start(&self, counter: usize, written: u64, width: u8) -> Option<()> {
        self.extended.get(counter)?.store(written & counter_mask(width), Ordering::Relaxed);
        Some(())
    }

    /// Polls `counter`: calls `read_raw` (the counter's MSR) once and returns the counter's 64-bit value
    /// at that read, exact if the previous poll of the counter was less than 2^W events earlier. The
    /// state advances to it unless another poll interrupted this one (it then holds that poll's
    /// value, as exact), so it never goes backwards. `None` for a counter out of range (`read_raw` is
    /// then not called).
    ///
    /// The order matters: the state is loaded *before* the raw read, so the raw value is never older
    /// than the state it is compared with (Linux's x86_perf_event_update orders them the same way, and
    /// uses the same compare-exchange for the same reason: an NMI may poll in between).
    pub fn poll<R: FnOnce() -> u64>(&self, counter: usize, width: u8, read_raw: R) -> Option<u64> {
        self.poll_unless_reset(counter, width, read_raw, || true)?.ok()
    }

    /// [`Self::poll`], except that a raw value below the last one, a wrap or a counter that was reset
    /// (resume from sleep zeroes the counters; a 2^W jump if taken for a wrap), is first put to
    /// `wrap_is_real`, called only then: if it says no, the state is left as it was and the poll
    /// returns `Err(NotAWrap)`, for the caller to repair the programming.
    pub fn poll_unless_reset<R: FnOnce() -> u64, C: FnOnce() -> bool>(
        &self,
        counter: usize,
        width: u8,
        read_raw: R,
        wrap_is_real: C,
    ) -> Option<Result<u64, NotAWrap>> {
        let cell = self.extended.get(counter)?;
        let previous = cell.load(Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let raw = read_raw();
        compiler_fence(Ordering::SeqCst);
        let mask = counter_mask(width);
        if raw & mask < previous & mask && !wrap_is_real() {
            return Some(Err(NotAWrap));
        }
        let now = previous.wrapping_add(advance(previous, raw, width));
        // Failure means an interrupting poll stored a value read after `previous`; keep it.
        let _ = cell.compare_exchange(previous, now, Ordering::Relaxed, Ordering::Relaxed);
        Some(Ok(now))
    }

    /// `counter`'s 64-bit value at its last poll (`None` when out of range).
    #[cfg(test)]
    pub fn last(&self, counter: usize) -> Option<u64> {
        Some(self.extended.get(counter)?.load(Ordering::Relaxed))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
