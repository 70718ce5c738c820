//! PDH's calculations: a displayed value from two raw samples of one counter (and of its base), per
//! counter type (the formulas of WMI's counter type pages, e.g.
//! https://learn.microsoft.com/windows/win32/wmisdk/counter-algorithm-counter-types), and perflib's
//! `_Total` aggregation of raw values ([`Aggregate`]).
//!
//! * `perf_counter_rawcount`, `perf_counter_large_rawcount`: N1.
//! * `perf_counter_counter`, `perf_counter_bulk_count`: (N1-N0) / ((T1-T0)/F).
//! * `perf_counter_delta`, `perf_counter_large_delta`: N1-N0.
//! * `perf_average_bulk`: (N1-N0) / (B1-B0), B the base counter that follows.
//! * `perf_average_timer`: ((N1-N0)/F) / (B1-B0).
//! * `perf_sample_fraction`: 100 (N1-N0) / (B1-B0).
//! * `perf_raw_fraction`, `perf_large_raw_fraction`: 100 N1 / B1 (one sample).
//! * `perf_100nsec_timer`: 100 (N1-N0) / (T1-T0), T in 100 ns units (the double's clock is 10 MHz).
//! * `perf_precision_100ns_timer`: 100 (N1-N0) / (B1-B0), B the timestamp counter that follows.
//! * `perf_elapsed_time`: (T1-N1)/F.
//!
//! A counter that needs two samples shows nothing on the first ([`Value::NoValue`]); a counter delta
//! below zero is `PDH_CALC_NEGATIVE_VALUE`, a time delta below zero `PDH_CALC_NEGATIVE_TIMEBASE` and a
//! base delta below zero `PDH_CALC_NEGATIVE_DENOMINATOR` (pdhmsg.h). A zero denominator shows 0, as PDH
//! does.

use counter_manifest::CounterType;

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

fn delta(new: u64, old: u64, status: u32) -> Result<f64, u32> {
    if new < old { Err(status) } else { Ok((new - old) as f64) }
}

fn base_delta(current: &Raw, previous: &Raw) -> Result<f64, u32> {
    match (current.base, previous.base) {
        (Some(new), Some(old)) => delta(new, old, PDH_CALC_NEGATIVE_DENOMINATOR),
        _ => Err(PDH_CSTATUS_INVALID_DATA),
    }
}

fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator == 0.0 { 0.0 } else { numerator / denominator }
}

/// The value PDH displays for a counter of type `ty` from its previous and current raw samples.
pub fn compute(ty: &CounterType, previous: Option<&Raw>, current: &Raw) -> Value {
    if ty.is_base {
        return Value::Status(PDH_CSTATUS_INVALID_DATA);
    }
    let frequency = current.frequency as f64;
    let one_sample = match ty.name {
        "perf_counter_rawcount" => Some(Ok(f64::from(current.value as u32))),
        "perf_counter_large_rawcount" => Some(Ok(current.value as f64)),
        "perf_raw_fraction" | "perf_large_raw_fraction" => Some(match current.base {
            Some(base) => Ok(100.0 * ratio(current.value as f64, base as f64)),
            None => Err(PDH_CSTATUS_INVALID_DATA),
        }),
        "perf_elapsed_time" => Some(Ok(ratio(current.time as f64 - current.value as f64, frequency))),
        _ => None,
    };
    if let Some(result) = one_sample {
        return result.map_or_else(Value::Status, Value::Value);
    }
    let Some(previous) = previous else { return Value::NoValue };
    let result = (|| -> Result<f64, u32> {
        let n = delta(current.value, previous.value, PDH_CALC_NEGATIVE_VALUE)?;
        let t = current.time - previous.time;
        if t < 0 {
            return Err(PDH_CALC_NEGATIVE_TIMEBASE);
        }
        let t = t as f64;
        Ok(match ty.name {
            "perf_counter_counter" | "perf_counter_bulk_count" => ratio(n, t / frequency),
            "perf_counter_delta" | "perf_counter_large_delta" => n,
            "perf_average_bulk" => ratio(n, base_delta(current, previous)?),
            "perf_average_timer" => ratio(n / frequency, base_delta(current, previous)?),
            "perf_sample_fraction" | "perf_precision_100ns_timer" => {
                100.0 * ratio(n, base_delta(current, previous)?)
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
/// https://learn.microsoft.com/windows/win32/perfctrs/performance-counters-counter-element).
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

    /// The aggregate of `values` (raw data of every instance), or None for undefined or no instances.
    pub fn apply(self, values: &[u64]) -> Option<u64> {
        if values.is_empty() {
            return None;
        }
        match self {
            Aggregate::Sum => Some(values.iter().fold(0u64, |sum, &value| sum.wrapping_add(value))),
            Aggregate::Avg => Some(
                (values.iter().map(|&value| u128::from(value)).sum::<u128>() / values.len() as u128) as u64,
            ),
            Aggregate::Min => values.iter().copied().min(),
            Aggregate::Max => values.iter().copied().max(),
            Aggregate::Undefined => None,
        }
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
    fn base_types_are_not_displayed() {
        let value = compute(ty("perf_average_base"), None, &raw(1, None, 0));
        assert_eq!(value, Value::Status(PDH_CSTATUS_INVALID_DATA));
    }

    #[test]
    fn aggregates() {
        assert_eq!(Aggregate::parse(Some("sum")).apply(&[1, 2, 3]), Some(6));
        assert_eq!(Aggregate::parse(Some("avg")).apply(&[1, 2, 4]), Some(2));
        assert_eq!(Aggregate::parse(Some("min")).apply(&[5, 2, 4]), Some(2));
        assert_eq!(Aggregate::parse(Some("max")).apply(&[5, 2, 4]), Some(5));
        assert_eq!(Aggregate::parse(Some("undefined")).apply(&[5]), None);
        assert_eq!(Aggregate::parse(None).apply(&[5]), None);
        assert_eq!(Aggregate::Sum.apply(&[]), None);
    }
}
