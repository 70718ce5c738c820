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
//! additionally clamped to the last value reported (crate::pmu::fold::ProcessorCounters::report), so
//! even a wrap could only freeze a value, never move it back.
//!
//! `width` arguments are clamped into 1..=64 (see [`clamp_width`]): the caller validates CPUID's width
//! once, and a bad one must not panic at PROFILE_LEVEL.

/// The widest counter: a 64-bit counter needs no extension.
pub const MAX_WIDTH: u8 = 64;

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

/// The 64-bit value of a W-bit counter read as `raw` after `overflows` delivered wraps, plus one more
/// when its overflow status bit was set but not yet delivered (`pending_overflow`):
/// `overflows * 2^W + (raw mod 2^W) + (pending ? 2^W : 0)`, modulo 2^64 (see the module comment).
///
/// Bits of `raw` at or above W are ignored (an MSR read of a W-bit counter returns them as 0 anyway).
#[cfg(test)]
pub const fn extend(overflows: u64, raw: u64, pending_overflow: bool, width: u8) -> u64 {
    let mask = counter_mask(width);
    extend_with(overflows, raw, pending_overflow, mask, mask.wrapping_add(1))
}

/// The 64-bit value of a W-bit counter (`overflows * 2^W + raw`, one more wrap when one is pending),
/// with W given as `mask` = [`counter_mask`]`(W)` and `wrap` = `mask + 1` = 2^W, both worked out once
/// per counter rather than at every read. `wrap` is 0 for W = 64, where `n * 2^64` is indeed 0 modulo
/// 2^64; the low W bits of the product are 0, so the addition never carries into them. A
/// multiplication rather than a shift: a shift by 64 is not a shift by 64 on x64 (the count is taken
/// modulo 64), so a shift needs a branch or a select around it, and one `imul` is cheaper.
#[inline(always)]
pub const fn extend_with(overflows: u64, raw: u64, pending_overflow: bool, mask: u64, wrap: u64) -> u64 {
    overflows.wrapping_add(pending_overflow as u64).wrapping_mul(wrap).wrapping_add(raw & mask)
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

#[cfg(test)]
mod tests;
