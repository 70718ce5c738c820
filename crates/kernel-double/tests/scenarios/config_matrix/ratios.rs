//! The ratio property of every cell: `_Total` ratios mean what they say, and no consumer caps one.
//!
//! For every ratio counter with 64-bit totals on both sides (`consumer::exactness::RULES`), each
//! processor's ratio fields hold its numerator and base totals (the base 100-fold for a ratio that can
//! exceed 1) where it counts both sides, and 0 in both where it counts one side or none, so that
//! perflib's `_Total` (a sum of each field on its own) and PDH's ratio of it cover only the processors
//! that count both. Over a workload interval, every ratio a consumer sees is the same with and without
//! PDH_FMT_NOCAP100 (nothing reaches the cap), no percentage is above 100, and each instance's and
//! `_Total`'s value is the ratio of the totals of the processors that count both.

use kernel_double::consumer::exactness::{self, Rule};
use kernel_double::consumer::pdh::{self, Value};
use kernel_double::consumer::{self, Column, Counterset, Formatter, Sample, TOTAL};

/// One rule's columns in the counterset: the ratio, its numerator and base totals, and the ratio's
/// base counter.
struct Columns {
    rule: &'static Rule,
    ratio: usize,
    numerator: usize,
    base: usize,
    ratio_base: usize,
}

fn columns(set: &Counterset) -> Vec<Columns> {
    let at = |name: &str| set.counters.iter().position(|counter| counter.name == name);
    exactness::RULES
        .iter()
        .filter_map(|rule| {
            let ratio = at(rule.ratio)?;
            Some(Columns {
                rule,
                ratio,
                numerator: at(rule.numerator)?,
                base: at(rule.base)?,
                ratio_base: set.counters[ratio].base.expect("a ratio has a base"),
            })
        })
        .collect()
}

/// The processors' instance names (every instance but `_Total`).
fn processors(sample: &Sample) -> Vec<String> {
    sample.instances.iter().map(|record| record.name.clone()).filter(|name| name != TOTAL).collect()
}

/// Checks `current` (and the interval since `previous`, if it was a workload interval: `shown`).
pub fn check(set: &Counterset, previous: &Sample, current: &Sample, shown: bool) {
    let rules = columns(set);
    assert!(rules.len() >= 4, "{}: only {} ratio rules apply", set.name, rules.len());
    let raw = |sample: &Sample, instance: &str| sample.values_of(set, instance).expect("an instance");
    let value = |values: &[Option<u64>], at: usize| values[at].expect("a raw value");
    for columns in &rules {
        // 100-fold base for a ratio shown as itself (scale 1), the count itself for a percentage.
        let multiple: u64 = if columns.rule.scale == 1.0 { 100 } else { 1 };
        let mut both_sides = Vec::new();
        for instance in processors(current) {
            let now = raw(current, &instance);
            let (n, d) = (value(&now, columns.numerator), value(&now, columns.base));
            let fields = (value(&now, columns.ratio), value(&now, columns.ratio_base));
            // Both sides counted: every event the workload makes moves where it is counted, so both
            // totals are above 0. A base without a numerator may be a side counting nothing yet; a
            // numerator without a base is one side counted alone.
            let counted = (n, d.wrapping_mul(multiple));
            let allowed: &[(u64, u64)] = match (n > 0, d > 0) {
                (true, true) => &[counted],
                (false, true) => &[counted, (0, 0)],
                _ => &[(0, 0)],
            };
            assert!(
                allowed.contains(&fields),
                "{instance}: {} and its base hold {fields:?}, with totals {n} and {d}: one of {allowed:?}",
                columns.rule.ratio
            );
            if fields.1 != 0 {
                both_sides.push(instance);
            }
        }
        if shown {
            check_shown(set, columns, previous, current, &both_sides);
        }
    }
}

/// The values consumers see over the interval: uncapped, percentages at most 100, `_Total` the ratio
/// of the totals of `both_sides`, the processors counting both (whose ratio base is not 0).
fn check_shown(
    set: &Counterset,
    columns: &Columns,
    previous: &Sample,
    current: &Sample,
    both_sides: &[String],
) {
    let rule = columns.rule;
    let delta = |instance: &str, at: usize| {
        let (now, then) =
            (current.values_of(set, instance).unwrap(), previous.values_of(set, instance).unwrap());
        (now[at].unwrap() - then[at].unwrap()) as f64
    };
    let sum = |at: usize| both_sides.iter().map(|instance| delta(instance, at)).sum::<f64>();
    let mut instances = processors(current);
    instances.push(TOTAL.to_string());
    for instance in instances {
        let column = Column { instance: Some(instance.clone()), counter: columns.ratio };
        let shown = |formatter| {
            consumer::values(set, std::slice::from_ref(&column), Some(previous), current, formatter)[0]
        };
        let uncapped = shown(Formatter::Uncapped);
        assert_eq!(shown(Formatter::WindowsExporter), uncapped, "{instance}: {} capped", rule.ratio);
        let Value::Value(uncapped) = uncapped else { panic!("{instance}: {} is {uncapped:?}", rule.ratio) };
        if pdh::is_percent(set.counters[columns.ratio].ty) && rule.scale == 100.0 {
            assert!(uncapped <= 100.0 + 1e-9, "{instance}: {} is {uncapped}", rule.ratio);
        }
        let (n, d) = if instance == TOTAL {
            (sum(columns.numerator), sum(columns.base))
        } else if both_sides.contains(&instance) {
            (delta(&instance, columns.numerator), delta(&instance, columns.base))
        } else {
            (0.0, 0.0)
        };
        let expected = if d == 0.0 { 0.0 } else { rule.scale * n / d };
        assert!(
            (uncapped - expected).abs() <= 1e-9 * expected.abs().max(1.0),
            "{instance}: {} shows {uncapped}, the totals of the processors counting both give {expected}",
            rule.ratio
        );
    }
}
