//! PDH's calculations: a displayed value from two raw samples of one counter (and of its base), per
//! counter type, and perflib's `_Total` aggregation of raw values ([`Aggregate`]).
//!
//! The formulas and field widths are Microsoft's sample of how a consumer computes each type from the
//! raw data ("Calculating Counter Values", Learn), with the types' formulas of WMI's counter type
//! pages: a 32-bit field is read zero-extended, so nothing is computed modulo 2^32 (a counter that
//! went down is `PDH_CALC_NEGATIVE_VALUE`, a base that wrapped `PDH_CALC_NEGATIVE_DENOMINATOR`); a
//! counter that needs two samples shows nothing on the first ([`Value::NoValue`]); a zero denominator
//! shows 0. [`format()`] adds what PdhGetFormattedCounterValue adds: a percentage above 100 shown as
//! 100 unless the caller passes PDH_FMT_NOCAP100, which each consumer's own source says whether it
//! does. Every formula, width and cap with its source: `docs/kernel-double.md`, "PDH's calculations".

use counter_manifest::CounterType;

/// pdh.h: return the value as a double.
pub const PDH_FMT_DOUBLE: u32 = 0x0000_0200;
/// pdh.h: do not cap a percentage at 100.
pub const PDH_FMT_NOCAP100: u32 = 0x0000_8000;
/// winperf.h: the display bits of a counter type, and the value saying "a percentage".
const PERF_DISPLAY_MASK: u32 = 0xF000_0000;
const PERF_DISPLAY_PERCENT: u32 = 0x2000_0000;

/// pdhmsg.h: a counter value went backwards between two samples.
pub const PDH_CALC_NEGATIVE_VALUE: u32 = 0x8000_07D8;
/// pdhmsg.h: the time base went backwards.
pub const PDH_CALC_NEGATIVE_TIMEBASE: u32 = 0x8000_07D7;
/// pdhmsg.h: the base (denominator) went backwards.
pub const PDH_CALC_NEGATIVE_DENOMINATOR: u32 = 0x8000_07D6;
/// pdhmsg.h: the counter type cannot be displayed (a base counter, for instance).
pub const PDH_CSTATUS_INVALID_DATA: u32 = 0xC000_0BBA;

/// One raw sample of one counter of one instance, as PDH_RAW_COUNTER holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw {
    /// FirstValue: the counter's data.
    pub value: u64,
    /// SecondValue: the base counter's data, for fraction types.
    pub base: Option<u64>,
    /// The sample's time (KeQueryPerformanceCounter ticks).
    pub time: i64,
    /// The time's frequency (ticks per second).
    pub frequency: i64,
}

/// A displayed value, as PdhGetFormattedCounterValue returns it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Value(f64),
    /// A rate on its first sample: typeperf prints `" "`.
    NoValue,
    /// A PDH status (the CStatus of an invalid value).
    Status(u32),
}

/// Whether `ty` needs two samples.
pub fn needs_two_samples(ty: &CounterType) -> bool {
    !matches!(
        ty.name,
        "perf_counter_rawcount"
            | "perf_counter_large_rawcount"
            | "perf_raw_fraction"
            | "perf_large_raw_fraction"
            | "perf_elapsed_time"
    ) && !ty.is_base
}

/// What a consumer reads of a field of `size` bytes: all of a PERF_SIZE_LARGE one, the low 32 bits
/// (zero-extended) of a PERF_SIZE_DWORD one.
pub fn field_value(value: u64, size: u32) -> u64 {
    if size == 4 { value & u64::from(u32::MAX) } else { value }
}

/// The size of the base counter `ty` reads its denominator from.
fn base_size(ty: &CounterType) -> u32 {
    ty.base
        .and_then(|name| counter_manifest::COUNTER_TYPES.iter().find(|base| base.name == name))
        .map_or(8, |base| base.size)
}

/// The counter's data delta: dropped (PDH_CALC_NEGATIVE_VALUE) when the data went down.
fn delta(new: u64, old: u64) -> Result<f64, u32> {
    if new < old { Err(PDH_CALC_NEGATIVE_VALUE) } else { Ok((new - old) as f64) }
}

/// The denominator: the LONGLONG difference of the two bases as read (a DWORD base zero-extended).
fn base_delta(ty: &CounterType, current: &Raw, previous: &Raw) -> Result<f64, u32> {
    let size = base_size(ty);
    match (current.base, previous.base) {
        (Some(new), Some(old)) => {
            let difference = (field_value(new, size) as i64).wrapping_sub(field_value(old, size) as i64);
            if difference < 0 { Err(PDH_CALC_NEGATIVE_DENOMINATOR) } else { Ok(difference as f64) }
        }
        _ => Err(PDH_CSTATUS_INVALID_DATA),
    }
}

fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator == 0.0 { 0.0 } else { numerator / denominator }
}

/// Whether PDH caps `ty`'s values at 100 for a caller without PDH_FMT_NOCAP100: a percent-display type.
pub fn is_percent(ty: &CounterType) -> bool {
    ty.value & PERF_DISPLAY_MASK == PERF_DISPLAY_PERCENT
}

/// `value` (of type `ty`) as a caller passing the format `flags` gets it: capped at 100 for a
/// percent-display type unless `flags` has [`PDH_FMT_NOCAP100`] (see the module docs).
pub fn format(ty: &CounterType, value: Value, flags: u32) -> Value {
    match value {
        Value::Value(shown) if is_percent(ty) && flags & PDH_FMT_NOCAP100 == 0 && shown > 100.0 => {
            Value::Value(100.0)
        }
        other => other,
    }
}

/// The value PDH calculates for a counter of type `ty` from its previous and current raw samples,
/// before [`format()`] caps it.
pub fn compute(ty: &CounterType, previous: Option<&Raw>, current: &Raw) -> Value {
    if ty.is_base {
        return Value::Status(PDH_CSTATUS_INVALID_DATA);
    }
    let frequency = current.frequency as f64;
    let value = field_value(current.value, ty.size);
    let one_sample = match ty.name {
        "perf_counter_rawcount" | "perf_counter_large_rawcount" => Some(Ok(value as f64)),
        "perf_raw_fraction" | "perf_large_raw_fraction" => Some(match current.base {
            Some(base) => Ok(100.0 * ratio(value as f64, field_value(base, base_size(ty)) as f64)),
            None => Err(PDH_CSTATUS_INVALID_DATA),
        }),
        "perf_elapsed_time" => Some(Ok(ratio(current.time as f64 - value as f64, frequency))),
        _ => None,
    };
    if let Some(result) = one_sample {
        return result.map_or_else(Value::Status, Value::Value);
    }
    let Some(previous) = previous else { return Value::NoValue };
    let result = (|| -> Result<f64, u32> {
        let n = delta(value, field_value(previous.value, ty.size))?;
        let t = current.time - previous.time;
        if t < 0 {
            return Err(PDH_CALC_NEGATIVE_TIMEBASE);
        }
        let t = t as f64;
        Ok(match ty.name {
            "perf_counter_counter" | "perf_counter_bulk_count" => ratio(n, t / frequency),
            "perf_counter_delta" | "perf_counter_large_delta" => n,
            "perf_average_bulk" => ratio(n, base_delta(ty, current, previous)?),
            "perf_average_timer" => ratio(n / frequency, base_delta(ty, current, previous)?),
            "perf_sample_fraction" | "perf_precision_100ns_timer" => {
                100.0 * ratio(n, base_delta(ty, current, previous)?)
            }
            "perf_100nsec_timer" => 100.0 * ratio(n, t),
            _ => return Err(PDH_CSTATUS_INVALID_DATA),
        })
    })();
    result.map_or_else(Value::Status, Value::Value)
}

/// A counter's `aggregate` attribute: how perflib makes `_Total` from the instances' raw values ("The
/// aggregation function to apply if the instances attribute of counterSet is globalAggregate,
/// multipleAggregate, or globalAggregateHistory", the counter element of the counter manifest schema:
/// <https://learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-element>).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    Sum,
    Avg,
    Min,
    Max,
    /// `undefined` (or absent): `_Total` has no value for this counter.
    Undefined,
}

impl Aggregate {
    /// The manifest's spelling (`sum`, `avg`, `min`, `max`, `undefined`; absent is undefined).
    pub fn parse(attribute: Option<&str>) -> Aggregate {
        match attribute {
            Some("sum") => Aggregate::Sum,
            Some("avg") => Aggregate::Avg,
            Some("min") => Aggregate::Min,
            Some("max") => Aggregate::Max,
            _ => Aggregate::Undefined,
        }
    }

    /// The aggregate of `values` (raw data of every instance) as `_Total`'s field of `size` bytes holds
    /// it, or None for undefined or no instances. `_Total` is an instance of the same object, whose
    /// counter definitions give every instance's field one CounterSize ("Retrieving Counter Data":
    /// CounterOffset and CounterSize locate a counter's data in each instance's counter block), so the
    /// sum of a PERF_SIZE_DWORD field is kept to 32 bits and wraps at 2^32.
    pub fn apply(self, values: &[u64], size: u32) -> Option<u64> {
        if values.is_empty() {
            return None;
        }
        let aggregate = match self {
            Aggregate::Sum => Some(values.iter().fold(0u64, |sum, &value| sum.wrapping_add(value))),
            Aggregate::Avg => Some(
                (values.iter().map(|&value| u128::from(value)).sum::<u128>() / values.len() as u128) as u64,
            ),
            Aggregate::Min => values.iter().copied().min(),
            Aggregate::Max => values.iter().copied().max(),
            Aggregate::Undefined => None,
        };
        aggregate.map(|value| field_value(value, size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counter_manifest::COUNTER_TYPES;

    fn ty(name: &str) -> &'static CounterType {
        COUNTER_TYPES.iter().find(|ty| ty.name == name).unwrap()
    }

    fn raw(value: u64, base: Option<u64>, time: i64) -> Raw {
        Raw { value, base, time, frequency: 10_000_000 }
    }

    #[test]
    fn raw_counts_show_the_current_value() {
        let current = raw(123, None, 0);
        assert_eq!(compute(ty("perf_counter_large_rawcount"), None, &current), Value::Value(123.0));
        assert_eq!(compute(ty("perf_counter_rawcount"), None, &raw(1 << 32 | 7, None, 0)), Value::Value(7.0));
    }

    #[test]
    fn rates_divide_by_seconds_and_need_two_samples() {
        let bulk = ty("perf_counter_bulk_count");
        assert_eq!(compute(bulk, None, &raw(5, None, 10)), Value::NoValue);
        // 3000 events in half a second.
        let value = compute(bulk, Some(&raw(1000, None, 10_000_000)), &raw(4000, None, 15_000_000));
        assert_eq!(value, Value::Value(6000.0));
        let value = compute(ty("perf_counter_counter"), Some(&raw(0, None, 0)), &raw(10, None, 20_000_000));
        assert_eq!(value, Value::Value(5.0));
    }

    #[test]
    fn a_negative_delta_is_pdh_calc_negative_value() {
        let bulk = ty("perf_counter_bulk_count");
        let value = compute(bulk, Some(&raw(10, None, 0)), &raw(9, None, 10));
        assert_eq!(value, Value::Status(PDH_CALC_NEGATIVE_VALUE));
        assert_eq!(value, Value::Status(0x800007D8));
        let fraction = ty("perf_sample_fraction");
        let value = compute(fraction, Some(&raw(10, Some(5), 0)), &raw(11, Some(4), 10));
        assert_eq!(value, Value::Status(PDH_CALC_NEGATIVE_DENOMINATOR));
    }

    #[test]
    fn fractions_use_the_base_delta() {
        let ipc = compute(ty("perf_average_bulk"), Some(&raw(100, Some(100), 0)), &raw(400, Some(300), 1));
        assert_eq!(ipc, Value::Value(1.5));
        let percent = compute(ty("perf_sample_fraction"), Some(&raw(0, Some(0), 0)), &raw(25, Some(200), 1));
        assert_eq!(percent, Value::Value(12.5));
        // 2 collects that took 3 ms in all (30000 ticks of 10 MHz): 1.5 ms each.
        let timer = compute(ty("perf_average_timer"), Some(&raw(0, Some(0), 0)), &raw(30_000, Some(2), 1));
        assert_eq!(timer, Value::Value(0.0015));
        let zero_base = compute(ty("perf_sample_fraction"), Some(&raw(0, Some(7), 0)), &raw(0, Some(7), 1));
        assert_eq!(zero_base, Value::Value(0.0));
    }

    #[test]
    fn a_dword_base_that_wraps_is_not_taken_modulo_2_to_the_32() {
        let fraction = ty("perf_sample_fraction");
        // Only the low 32 bits are read: 2^32 + 30 reads as 30.
        let value = compute(fraction, Some(&raw(0, Some(0), 0)), &raw(15, Some((1 << 32) + 30), 1));
        assert_eq!(value, Value::Value(50.0));
        // Wrapped once: the LONGLONG difference of the zero-extended bases is negative.
        let before = raw(10, Some(u64::from(u32::MAX) - 9), 0);
        let value = compute(fraction, Some(&before), &raw(20, Some(10), 1));
        assert_eq!(value, Value::Status(PDH_CALC_NEGATIVE_DENOMINATOR));
        // Wrapped and came back above: a positive denominator 2^32 short, a wrong value.
        let value = compute(fraction, Some(&raw(0, Some(100), 0)), &raw(100, Some(100 + 200), 1));
        assert_eq!(value, Value::Value(50.0));
        let true_base = (1u64 << 32) + 200;
        let wrapped = compute(fraction, Some(&raw(0, Some(100), 0)), &raw(100, Some(100 + true_base), 1));
        assert_eq!(wrapped, Value::Value(50.0), "the wrap is invisible: 50% instead of ~0%");
        // A 32-bit counter's data that wrapped is dropped.
        let rate = ty("perf_counter_counter");
        let value = compute(rate, Some(&raw(u64::from(u32::MAX), None, 0)), &raw(1 << 32, None, 10));
        assert_eq!(value, Value::Status(PDH_CALC_NEGATIVE_VALUE));
    }

    #[test]
    fn precision_timers_divide_64_bit_deltas() {
        let precision = ty("perf_precision_100ns_timer");
        let (n0, d0) = (5u64 << 40, 9u64 << 40);
        let value =
            compute(precision, Some(&raw(n0, Some(d0), 0)), &raw(n0 + (3 << 33), Some(d0 + (4 << 33)), 1));
        assert_eq!(value, Value::Value(75.0));
        // The LONGLONG difference is right across a 2^64 wrap of the timestamp.
        let before = raw(10, Some(u64::MAX - 99), 0);
        let value = compute(precision, Some(&before), &raw(60, Some(100), 1));
        assert_eq!(value, Value::Value(25.0));
        assert_eq!(compute(precision, None, &before), Value::NoValue);
    }

    #[test]
    fn percentages_are_capped_at_100_unless_the_caller_says_nocap100() {
        let precision = ty("perf_precision_100ns_timer");
        // IPC 3.5 as 100 x instructions over cycles: 350, shown 100 without the flag.
        let ipc = compute(precision, Some(&raw(0, Some(0), 0)), &raw(7, Some(2), 1));
        assert_eq!(ipc, Value::Value(350.0));
        assert_eq!(format(precision, ipc, PDH_FMT_DOUBLE), Value::Value(100.0));
        assert_eq!(format(precision, ipc, PDH_FMT_DOUBLE | PDH_FMT_NOCAP100), Value::Value(350.0));
        // The same ratio over a base of 100 x cycles is 3.5 (to the last bit of a double: 100 x 0.035)
        // and nobody caps it.
        let ratio = compute(precision, Some(&raw(0, Some(0), 0)), &raw(7, Some(200), 1));
        assert_eq!(format(precision, ratio, PDH_FMT_DOUBLE), ratio);
        assert!(matches!(ratio, Value::Value(ipc) if (ipc - 3.5).abs() < 1e-12), "{ratio:?}");
        assert_eq!(format(ty("perf_sample_fraction"), Value::Value(100.5), 0), Value::Value(100.0));
        // Rates and statuses pass untouched.
        let rate = Value::Value(5e9);
        assert_eq!(format(ty("perf_counter_bulk_count"), rate, PDH_FMT_DOUBLE), rate);
        assert_eq!(format(ty("perf_counter_large_rawcount"), Value::Value(1e12), 0), Value::Value(1e12));
        let status = Value::Status(PDH_CALC_NEGATIVE_VALUE);
        assert_eq!(format(precision, status, 0), status);
        assert!(!is_percent(ty("perf_average_bulk")) && is_percent(ty("perf_100nsec_timer")));
    }

    /// `_Total` of Instructions per Cycle on 2048 processors at 6 GHz: its base, the sum of 100 x each
    /// processor's cycles modulo 2^64, grows 100 x 2048 x 6e9 = 1.23e15 a second and wraps 2^64 every
    /// 4.17 hours. PDH takes the base's difference as a LONGLONG, right modulo 2^64 for any interval
    /// below 2^63 of it (2.08 hours), so a wrap of the base changes nothing; the numerator (the
    /// instructions, 4.9e13 a second at IPC 4: every 4.3 days) is checked for going down, and the one
    /// sample across its wrap is dropped (PDH_CALC_NEGATIVE_VALUE), as for any 64-bit count.
    #[test]
    fn a_total_base_of_100_times_the_cycles_of_2048_processors_wraps_harmlessly() {
        const PROCESSORS: u64 = 2048;
        const HZ: u64 = 6_000_000_000;
        let base_per_second = (100 * PROCESSORS * HZ) as f64;
        let hours = |seconds: f64| seconds / 3600.0;
        assert!((hours(2f64.powi(64) / base_per_second) - 4.17).abs() < 0.01);
        assert!((hours(2f64.powi(63) / base_per_second) - 2.08).abs() < 0.01, "the longest interval");
        let days_numerator = 2f64.powi(64) / (4 * PROCESSORS * HZ) as f64 / 86_400.0;
        assert!((days_numerator - 4.34).abs() < 0.01);
        // Each processor just below the point where the sum of 100 x its cycles passes 2^64, then a
        // minute at 6 GHz and IPC 3.5.
        let cycles_before = (1u64 << 63) / 50 / PROCESSORS - 2 * HZ;
        let (cycles, instructions) = (60 * HZ, 60 * HZ / 2 * 7);
        let sum = |value: u64| (0..PROCESSORS).fold(0u64, |sum, _| sum.wrapping_add(value));
        let base = |cycles: u64| sum(cycles.wrapping_mul(100));
        let (d0, d1) = (base(cycles_before), base(cycles_before + cycles));
        assert!(d1 < d0, "the summed base wrapped between the samples");
        let precision = ty("perf_precision_100ns_timer");
        let n0 = 1u64 << 40;
        let shown =
            compute(precision, Some(&raw(n0, Some(d0), 0)), &raw(n0 + sum(instructions), Some(d1), 1));
        let Value::Value(ipc) = format(precision, shown, PDH_FMT_DOUBLE) else { panic!("{shown:?}") };
        assert!((ipc - 3.5).abs() < 1e-12, "{ipc}");
        // The numerator's own wrap: that one sample is dropped.
        let across =
            compute(precision, Some(&raw(u64::MAX - 5, Some(d0), 0)), &raw(sum(instructions), Some(d1), 1));
        assert_eq!(across, Value::Status(PDH_CALC_NEGATIVE_VALUE));
    }

    #[test]
    fn base_types_are_not_displayed() {
        let value = compute(ty("perf_average_base"), None, &raw(1, None, 0));
        assert_eq!(value, Value::Status(PDH_CSTATUS_INVALID_DATA));
    }

    #[test]
    fn aggregates() {
        assert_eq!(Aggregate::parse(Some("sum")).apply(&[1, 2, 3], 8), Some(6));
        assert_eq!(Aggregate::parse(Some("avg")).apply(&[1, 2, 4], 8), Some(2));
        assert_eq!(Aggregate::parse(Some("min")).apply(&[5, 2, 4], 8), Some(2));
        assert_eq!(Aggregate::parse(Some("max")).apply(&[5, 2, 4], 8), Some(5));
        assert_eq!(Aggregate::parse(Some("undefined")).apply(&[5], 8), None);
        assert_eq!(Aggregate::parse(None).apply(&[5], 8), None);
        assert_eq!(Aggregate::Sum.apply(&[], 8), None);
        // _Total's DWORD field holds the sum's low 32 bits; a LARGE one the whole sum.
        let big = [3 << 31, 3 << 31];
        assert_eq!(Aggregate::Sum.apply(&big, 4), Some(0));
        assert_eq!(Aggregate::Sum.apply(&big, 8), Some(3 << 32));
    }
}
