//! Property-based consumers: random CounterMask, InstanceId and InstanceMask values
//! (wildcards `*` and `?`, case variants, empty masks, non-ASCII characters) sent to the real
//! pmupcw.sys through the double's CollectData and EnumerateInstances callbacks, on 72 virtual
//! processors in two groups. Each result is checked against a reference filter written here:
//! instances named `group,number` with id group*64+number, selected by id (unless
//! PCW_ANY_INSTANCE_ID) and by the mask (perflib's case-insensitive wildcards; no mask or an empty one
//! selects every instance), in processor order; every requested counter equals a full collect's
//! value, and every unrequested one is 0 unless it reads the same field as a requested counter.
//! The double presents a Skylake PMU and each case first runs a random amount of the workload model on
//! a random processor, so the values are not 0. A full collect before and after each query brackets
//! it: where the two agree the query's values must equal them; in some cases the workload runs again
//! between the first full collect and the query, and the query's values must lie between the two.

use crate::common;

use kernel_double::consumer::{self, Counterset};
use kernel_double::control::pcw::{self, InstanceRecord, PCW_ANY_INSTANCE_ID, Query};
use kernel_double::cpu::{cpuid, pmu, topology};
use kernel_double::status::STATUS_SUCCESS;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

const HARDWARE_COUNTERS: &str = "Hardware Counters";

/// Requested values compared with a non-zero full collect (0 where the PMU is unusable).
static NONZERO_COMPARED: AtomicUsize = AtomicUsize::new(0);

/// The kernel's 1:1 upcase of one UTF-16 code unit (a character whose upper case is several, or
/// outside the BMP, stays as it is).
fn upcase(unit: u16) -> u16 {
    match char::from_u32(u32::from(unit)).map(|c| {
        let mut upper = c.to_uppercase();
        (upper.next(), upper.next())
    }) {
        Some((Some(single), None)) if (single as u32) <= 0xFFFF => single as u32 as u16,
        _ => unit,
    }
}

/// Reference wildcard match, by dynamic programming over (mask prefix, name prefix).
fn wildcard(mask: &[u16], name: &[u16]) -> bool {
    let mut matched = vec![vec![false; name.len() + 1]; mask.len() + 1];
    matched[0][0] = true;
    for i in 1..=mask.len() {
        for j in 0..=name.len() {
            matched[i][j] = match mask[i - 1] {
                0x2A => matched[i - 1][j] || (j > 0 && matched[i][j - 1]),
                0x3F => j > 0 && matched[i - 1][j - 1],
                unit => j > 0 && matched[i - 1][j - 1] && upcase(unit) == upcase(name[j - 1]),
            };
        }
    }
    matched[mask.len()][name.len()]
}

fn selected(query: &Query, name: &str, id: u32) -> bool {
    let id_ok = query.instance_id == PCW_ANY_INSTANCE_ID || query.instance_id == id;
    let mask_ok = match query.instance_mask.as_deref() {
        None | Some("") => true,
        Some(mask) => {
            let mask: Vec<u16> = mask.encode_utf16().collect();
            wildcard(&mask, &name.encode_utf16().collect::<Vec<_>>())
        }
    };
    id_ok && mask_ok
}

fn collect(query: &Query) -> Vec<InstanceRecord> {
    let (status, records) = pcw::collect(HARDWARE_COUNTERS, query).expect("registered");
    assert_eq!(status, STATUS_SUCCESS);
    records
}

/// Work run on a virtual processor: (processor, units, whether to run it again between the first full
/// collect and the query).
type Workload = (u32, u64, bool);

fn check(set: &Counterset, query: &Query, (vp, units, move_between): Workload) -> Result<(), TestCaseError> {
    let everything = Query { counter_mask: set.full_mask(), ..Query::default() };
    pmu::step(vp, units);
    let before = collect(&everything);
    if move_between {
        pmu::step(vp, units);
    }
    let result = collect(query);
    let after = collect(&everything);

    let expected: Vec<(String, u32)> = before
        .iter()
        .filter(|record| selected(query, &record.name, record.id))
        .map(|record| (record.name.clone(), record.id))
        .collect();
    let got: Vec<(String, u32)> = result.iter().map(|record| (record.name.clone(), record.id)).collect();
    prop_assert_eq!(&got, &expected, "collect {:?}", query);

    let (status, enumerated) = pcw::enumerate(HARDWARE_COUNTERS, query).expect("registered");
    prop_assert_eq!(status, STATUS_SUCCESS);
    let enumerated: Vec<(String, u32)> =
        enumerated.into_iter().map(|record| (record.name, record.id)).collect();
    prop_assert_eq!(&enumerated, &expected, "enumerate {:?}", query);

    let requested = |index: usize| query.counter_mask & (1u64 << set.counters[index].id) != 0;
    for record in &result {
        let values = record.values.as_ref().expect("collect returns data");
        prop_assert_eq!(values.len(), set.counters.len());
        let full_before =
            before.iter().find(|full| full.id == record.id).and_then(|full| full.values.clone());
        let full_after = after.iter().find(|full| full.id == record.id).and_then(|full| full.values.clone());
        let stable = full_before.is_some() && full_before == full_after;
        for (index, counter) in set.counters.iter().enumerate() {
            let shares_a_requested_field = (0..set.counters.len())
                .any(|other| requested(other) && set.counters[other].field == counter.field);
            if !requested(index) && !shares_a_requested_field {
                prop_assert_eq!(
                    values[index],
                    0,
                    "{} of {} not requested by {:?}",
                    counter.name,
                    record.name,
                    query
                );
            } else if stable {
                let full = full_before.as_ref().unwrap()[index];
                prop_assert_eq!(values[index], full, "{} of {} under {:?}", counter.name, record.name, query);
                if full != 0 {
                    NONZERO_COMPARED.fetch_add(1, Ordering::Relaxed);
                }
            } else if let (Some(low), Some(high)) = (&full_before, &full_after) {
                // The counts only grow: a collect between two others reads a value between theirs.
                let (low, high) = (low[index].min(high[index]), low[index].max(high[index]));
                prop_assert!(
                    (low..=high).contains(&values[index]),
                    "{} of {} under {:?}: {} outside [{low}, {high}]",
                    counter.name,
                    record.name,
                    query,
                    values[index]
                );
                NONZERO_COMPARED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

fn counter_masks() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0..21u32).prop_map(|bit| 1u64 << bit),
        any::<u32>().prop_map(|bits| u64::from(bits) & 0x1F_FFFF),
        (0..64u32).prop_map(|bit| 1u64 << bit),
        Just(0),
        Just(u64::MAX),
    ]
}

fn instance_ids() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => Just(PCW_ANY_INSTANCE_ID),
        3 => 0..140u32,
        1 => any::<u32>(),
    ]
}

fn instance_masks() -> impl Strategy<Value = Option<String>> {
    const FIXED: &[&str] = &[
        "", "*", "**", "?", "?,?", "?,??", "0,*", "1,*", "1,3?", "*,1*", "*5", "0,35", "1,35", "1,36",
        "_Total", "_total", "_TOTAL", "*total", "0,0*", "*,*", "*?*", ",", "0,", "1,0", "01,0",
    ];
    prop_oneof![
        2 => Just(None),
        3 => proptest::sample::select(FIXED).prop_map(|mask| Some(mask.to_string())),
        4 => "[0-9,*?]{0,6}".prop_map(Some),
        1 => "[0-9,*?_tToOaAlLß\u{130}\u{1F600}]{0,8}".prop_map(Some),
    ]
}

#[test]
fn random_queries_match_the_reference_filter() {
    topology::configure(72, 36);
    cpuid::set_model(&cpuid::SKYLAKE);
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    let set = Counterset::open(&consumer::manifest(), HARDWARE_COUNTERS).expect("the manifest's counterset");
    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, set.full_mask()), Some(STATUS_SUCCESS));

    // The reference filter itself, on cases whose answers are known.
    let name = |text: &str| text.encode_utf16().collect::<Vec<u16>>();
    assert!(wildcard(&name("1,3?"), &name("1,35")) && !wildcard(&name("1,3?"), &name("1,3")));
    assert!(wildcard(&name("*"), &name("")) && !wildcard(&name(""), &name("0,0")));
    assert!(wildcard(&name("_total"), &name("_Total")) && wildcard(&name("*,*5"), &name("0,35")));
    let all = collect(&Query::default());
    assert_eq!(all.len(), 72);

    let mut runner = TestRunner::new(Config { cases: 400, failure_persistence: None, ..Config::default() });
    let workload = (0..72u32, 1..100_000u64, proptest::bool::weighted(0.25));
    let strategy = (counter_masks(), instance_ids(), instance_masks(), workload);
    let outcome = runner.run(&strategy, |(counter_mask, instance_id, instance_mask, workload)| {
        check(&set, &Query { counter_mask, instance_mask, instance_id }, workload)
    });
    if let Err(error) = outcome {
        panic!("{error}");
    }
    let compared = NONZERO_COMPARED.load(Ordering::Relaxed);
    eprintln!("{compared} requested values compared with non-zero full collects");
    assert!(compared > 1000, "the workload did not make the counters move");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, set.full_mask()), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    common::assert_clean();
}
