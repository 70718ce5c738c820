//! Extending W-bit hardware counters to 64 bits: pure arithmetic, host-tested.
//!
//! A general-purpose or fixed counter is W bits wide (CPUID.0AH reports W, typically 48; anything from
//! 32 to 64 occurs). Its 64-bit value is `wraps * 2^W + raw`, where `wraps` comes either from the
//! overflow interrupt (crate::pmu::fold) or from polling often enough that two reads are less than 2^W
//! events apart (crate::pmu::poll). Everything here is `core` arithmetic on plain integers: no panic
//! on any input, no allocation, no state shared between processors.
//!
//! **At 2^64 the arithmetic wraps.** 2^64 events take 12 years at 48e9 events per second (6 GHz times
//! 8 events per cycle, the highest rate crate::pmu::poll assumes) and 97 years for a 6 GHz cycle
//! counter, so the wrap is never reached; wrapping keeps every function branch-free and exact modulo
//! 2^64 (differences of two values, which is what a rate is, stay right). What a consumer sees is
//! additionally clamped by [`Monotonic`], so even a wrap could only freeze a value, never move it back.
//!
//! `width` arguments are clamped into 1..=64 (see [`clamp_width`]): the caller validates CPUID's width
//! once, and a bad one must not panic at PROFILE_LEVEL.

/// The widest counter: a 64-bit counter needs no extension.
pub const MAX_WIDTH: u8 = 64;

/// Bits 31..0: what a write to a legacy IA32_PMCx (0xC1 + x) actually sets; the counter then holds
/// bit 31 copied into every bit above (the write is sign-extended from bit 31).
const LEGACY_WRITABLE: u64 = 0xFFFF_FFFF;

/// `width` as a shift count in 1..=64: 0 counts as 1 and anything above 64 as 64.
#[inline(always)]
pub const fn clamp_width(width: u8) -> u32 {
    if width == 0 {
        1
    } else if width > MAX_WIDTH {
        MAX_WIDTH as u32
    } else {
        width as u32
    }
}

/// 2^W - 1: the bits a W-bit counter holds.
#[inline(always)]
pub const fn counter_mask(width: u8) -> u64 {
    u64::MAX >> (64 - clamp_width(width))
}

/// `n * 2^W` modulo 2^64 (0 when W = 64: 2^64 is 0 modulo 2^64).
#[inline(always)]
const fn times_wrap(n: u64, width: u8) -> u64 {
    match n.checked_shl(clamp_width(width)) {
        Some(shifted) => shifted,
        None => 0,
    }
}

/// The 64-bit value of a W-bit counter read as `raw` after `overflows` delivered wraps, plus one more
/// when its overflow status bit was set but not yet delivered (`pending_overflow`):
/// `overflows * 2^W + (raw mod 2^W) + (pending ? 2^W : 0)`, modulo 2^64 (see the module comment).
///
/// Bits of `raw` at or above W are ignored (an MSR read of a W-bit counter returns them as 0 anyway).
#[inline(always)]
pub const fn extend(overflows: u64, raw: u64, pending_overflow: bool, width: u8) -> u64 {
    let wraps = overflows.wrapping_add(pending_overflow as u64);
    // The low W bits of times_wrap(..) are 0, so this addition never carries into them.
    times_wrap(wraps, width).wrapping_add(raw & counter_mask(width))
}

/// Events counted between two reads of a W-bit counter, `previous_raw` then `raw`, assuming fewer than
/// 2^W events happened in between (at most one wrap): `(raw - previous_raw) mod 2^W`.
///
/// This is Linux's polling extension, arch/x86/events/core.c `x86_perf_event_update`:
/// `shift = 64 - x86_pmu.cntval_bits; delta = (new_raw_count << shift) - (prev_raw_count << shift);
/// delta >>= shift;`. Masking the difference is the same residue without the shifts.
#[inline(always)]
pub const fn advance(previous_raw: u64, raw: u64, width: u8) -> u64 {
    raw.wrapping_sub(previous_raw) & counter_mask(width)
}

/// The value a W-bit Intel counter holds after `written` is written through its legacy MSR IA32_PMCx
/// (0xC1 + x): only bits 31..0 are writable and bit 31 is copied into bits W-1..32. Writing through the
/// full-width alias IA32_A_PMCx (0x4C1 + x, present when IA32_PERF_CAPABILITIES bit 13 is set) instead
/// stores `written mod 2^W`.
///
/// So 0 (how the driver starts its counters) and "2^W minus at most 2^31" (a counter at most 2^31
/// events before its wrap, how Linux arms sampling periods) are written exactly through either MSR;
/// a large positive value (2^31 ..= 2^W - 2^31 - 1) is not: 2^31 becomes 2^W - 2^31, 2^40 becomes 0.
#[inline(always)]
pub const fn legacy_write_result(written: u64, width: u8) -> u64 {
    let low = written & LEGACY_WRITABLE;
    // Sign-extend bit 31 through bit 63 without casts between signed and unsigned types.
    let extended = if low & 0x8000_0000 != 0 { low | !LEGACY_WRITABLE } else { low };
    extended & counter_mask(width)
}

/// The value to write to a W-bit counter so that it wraps (and raises its overflow interrupt) after
/// `headroom` more events: the counter must hold `2^W - headroom`. `headroom` is taken modulo 2^W
/// with 0 meaning a full 2^W (write 0, the normal start).
///
/// `full_width`: the write goes through IA32_A_PMCx (any value is exact). Otherwise it goes through
/// the legacy IA32_PMCx and the result is the low 32 bits to write (the upper 32 are ignored by the
/// MSR). The legacy write reaches only counter values below 2^31 or from 2^W - 2^31 up, so a headroom
/// (mod 2^W) in 2^31+1 ..= 2^W-2^31 (only possible when W > 32) is replaced by 2^31, the largest one
/// it reaches below that range: the counter then wraps sooner than asked, never later. Tests and
/// diagnostics use this to start a counter near its wrap.
#[inline]
pub const fn preload_for_headroom(headroom: u64, width: u8, full_width: bool) -> u64 {
    let target = 0u64.wrapping_sub(headroom) & counter_mask(width);
    if full_width {
        return target;
    }
    let low = target & LEGACY_WRITABLE;
    if legacy_write_result(low, width) == target {
        low
    } else {
        // 0x8000_0000 sign-extends to 2^W - 2^31 (reached only for W > 32, where that is below 2^W).
        0x8000_0000
    }
}

/// The value last reported for one counter, so that what consumers see never goes backwards.
///
/// Plain state: exactly one reader owns it (per processor and counter). crate::pmu::fold keeps the
/// same state in an atomic cell for readers that can interrupt each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Monotonic {
    last: u64,
}

impl Monotonic {
    /// Nothing reported yet (0).
    pub const fn new() -> Self {
        Monotonic { last: 0 }
    }

    /// Continues after `last` was reported.
    pub const fn starting_at(last: u64) -> Self {
        Monotonic { last }
    }

    /// Reports `value`: the larger of it and the last value reported.
    #[inline]
    pub fn observe(&mut self, value: u64) -> u64 {
        if value > self.last {
            self.last = value;
        }
        self.last
    }

    /// The last value reported.
    pub const fn last(&self) -> u64 {
        self.last
    }
}

/// One counter's reported total across PMU sessions: the driver owns the counters only while a query
/// is active, and every new session starts the hardware (and the overflow counts) from 0 again.
///
/// The reported value is `base + extended`, where `extended` is the current session's 64-bit value;
/// closing a session ([`Base::release`]) with its final extended value makes the total reached the new
/// base. Reports are clamped by a [`Monotonic`], so a total never goes backwards even if a session's
/// last read had to fall back to an earlier value. Keep one per logical counter (event), not per
/// hardware counter: a later session may put the event on another counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base {
    base: u64,
    reported: Monotonic,
}

impl Base {
    /// No session yet: base 0, nothing reported.
    pub const fn new() -> Self {
        Base { base: 0, reported: Monotonic::new() }
    }

    /// Continues from a stored `base` and `last_reported` value.
    pub const fn from_parts(base: u64, last_reported: u64) -> Self {
        Base { base, reported: Monotonic::starting_at(last_reported) }
    }

    /// The total of every closed session.
    pub const fn base(&self) -> u64 {
        self.base
    }

    /// The last value reported.
    pub const fn last_reported(&self) -> u64 {
        self.reported.last()
    }

    /// The value to report for the current session's extended value: `base + extended`, never less
    /// than the last value reported.
    #[inline]
    pub fn report(&mut self, extended: u64) -> u64 {
        self.reported.observe(self.base.wrapping_add(extended))
    }

    /// Closes the session whose final extended value (read after the counter was stopped) is
    /// `final_extended`; the next session's extended values count from 0 on top of the returned total.
    pub fn release(&mut self, final_extended: u64) -> u64 {
        let total = self.report(final_extended);
        self.base = total;
        total
    }
}

#[cfg(test)]
#[path = "extend_tests.rs"]
mod tests;
