//! The consumer model's unit tests: descriptors paired with the manifest, rates, ratios and `_Total` over made-up samples, and the formatted legacy block.

use super::*;

fn descriptors(manifest: &Manifest, name: &str) -> Vec<Descriptor> {
    let set = manifest.counter_sets.iter().find(|set| set.name == name).unwrap();
    set.counters
        .iter()
        .map(|counter| {
            let field = set.layout.field(&counter.field).unwrap();
            Descriptor {
                id: counter.id as u16,
                struct_index: 0,
                offset: field.offset as u16,
                size: counter.ty.size as u16,
            }
        })
        .collect()
}

#[test]
fn pairs_descriptors_with_the_manifest() {
    let manifest = manifest();
    let set = Counterset::new(&manifest, "Hardware Counters", &descriptors(&manifest, "Hardware Counters"))
        .unwrap();
    let count = descriptors(&manifest, "Hardware Counters").len();
    assert_eq!(set.counters.len(), count);
    assert!(set.has_total());
    // One bit per counter id (ids 0 to 63, not all of them used).
    assert_eq!(set.full_mask().count_ones() as usize, count);
    assert_eq!(set.full_mask() >> 60, 0xF, "Instructions per Cycle and Relative Frequency, with bases");
    let ipc = set.index_of(60).unwrap();
    assert_eq!(set.counters[ipc].name, "Instructions per Cycle");
    assert_eq!(set.counters[ipc].ty.name, "perf_precision_100ns_timer");
    assert_eq!(set.counters[ipc].base, Some(ipc + 1));
    assert_eq!(set.counters[0].aggregate, Aggregate::Sum);
    assert_eq!(set.counters[ipc].aggregate, Aggregate::Sum);
    assert_eq!(set.counters[ipc + 1].aggregate, Aggregate::Sum);
    let mut wrong = descriptors(&manifest, "Hardware Counters");
    wrong[0].size = 4;
    assert!(Counterset::new(&manifest, "Hardware Counters", &wrong).is_err());
    assert!(Counterset::new(&manifest, "Hardware Counters", &wrong[1..]).is_err());
}

fn record(name: &str, values: Vec<u64>) -> InstanceRecord {
    InstanceRecord { name: name.into(), id: 0, values: Some(values) }
}

#[test]
fn computes_rates_ratios_and_total() {
    let manifest = manifest();
    let set = Counterset::new(&manifest, "Hardware Counters", &descriptors(&manifest, "Hardware Counters"))
        .unwrap();
    let mut first = vec![0u64; set.counters.len()];
    first[0] = 1000;
    first[7] = 1000;
    let (ipc, base) = (set.index_of(60).unwrap(), set.index_of(61).unwrap());
    // Instructions per cycle: instructions over 100 x the cycles.
    first[ipc] = 100;
    first[base] = 100 * 100;
    let mut second = first.clone();
    second[0] = 3000;
    second[7] = 3000;
    second[ipc] = 400;
    second[base] = 100 * 300;
    let sample = |time, values: &Vec<u64>| Sample {
        time,
        frequency: 10_000_000,
        unix_millis: 0,
        instances: vec![record("0,0", values.clone()), record("0,1", values.clone())],
    };
    let (one, two) = (sample(10_000_000, &first), sample(20_000_000, &second));
    let columns = columns(&set, &one);
    // Every counter but the hidden bases, per instance; _Total those with an aggregate.
    let displayed: Vec<_> =
        set.counters.iter().filter(|counter| !counter.ty.name.ends_with("_base")).collect();
    let aggregated = displayed.iter().filter(|counter| counter.aggregate != Aggregate::Undefined).count();
    assert_eq!(columns.len(), 2 * displayed.len() + aggregated);
    let at = |instance: &str, id: u32| {
        columns
            .iter()
            .position(|c| c.instance.as_deref() == Some(instance) && c.counter == set.index_of(id).unwrap())
            .unwrap()
    };
    let before = values(&set, &columns, None, &one, Formatter::Uncapped);
    assert_eq!(before[at("0,0", 0)], Value::NoValue);
    assert_eq!(before[at("0,0", 7)], Value::Value(1000.0));
    assert_eq!(before[at("_Total", 7)], Value::Value(2000.0));
    let after = values(&set, &columns, Some(&one), &two, Formatter::Uncapped);
    assert_eq!(after[at("0,0", 0)], Value::Value(2000.0));
    assert_eq!(after[at("_Total", 0)], Value::Value(4000.0));
    assert_eq!(after[at("0,1", 60)], Value::Value(1.5), "instructions per cycle");
    let backwards = values(&set, &columns, Some(&two), &sample(30_000_000, &first), Formatter::Uncapped);
    assert_eq!(backwards[at("0,0", 0)], Value::Status(pdh::PDH_CALC_NEGATIVE_VALUE));
    assert_eq!(path("HOST", &set, &columns[0]), r"\\HOST\Hardware Counters(0,0)\Instructions Retired/sec");
}

#[test]
fn total_of_a_ratio_is_the_summed_numerator_over_the_summed_base() {
    let manifest = manifest();
    let set = Counterset::new(&manifest, "Hardware Counters", &descriptors(&manifest, "Hardware Counters"))
        .unwrap();
    let (ipc, base) = (set.index_of(16).unwrap(), set.index_of(17).unwrap());
    let sample = |time, busy: (u64, u64), stalled: (u64, u64)| {
        let mut one = vec![0u64; set.counters.len()];
        let mut two = vec![0u64; set.counters.len()];
        (one[ipc], one[base]) = busy;
        (two[ipc], two[base]) = stalled;
        Sample {
            time,
            frequency: 10_000_000,
            unix_millis: 0,
            instances: vec![record("0,0", one), record("0,1", two)],
        }
    };
    // % LLC Misses' fields: 0,0 moves 300 over 200, 0,1 100 over 800 (150 and 12.5, uncapped).
    let first = sample(10_000_000, (100, 100), (0, 0));
    let second = sample(20_000_000, (400, 300), (100, 800));
    let column = |instance: &str| Column { instance: Some(instance.into()), counter: ipc };
    let shown = values(
        &set,
        &[column("0,0"), column("0,1"), column(TOTAL)],
        Some(&first),
        &second,
        Formatter::Uncapped,
    );
    assert_eq!(shown, [Value::Value(150.0), Value::Value(12.5), Value::Value(100.0 * (400.0 / 1000.0))]);
    // A numerator summed over a base that is not aggregated has nothing to divide by.
    let mut unaggregated_base = set.clone();
    unaggregated_base.counters[base].aggregate = Aggregate::Undefined;
    let shown = values(&unaggregated_base, &[column(TOTAL)], Some(&first), &second, Formatter::Uncapped);
    assert_eq!(shown, [Value::Status(PDH_CSTATUS_NO_INSTANCE)]);
}

#[test]
fn formats_a_sample_that_validates() {
    let manifest = manifest();
    let set = Counterset::new(&manifest, "Hardware Counters", &descriptors(&manifest, "Hardware Counters"))
        .unwrap();
    let status = Counterset::new(
        &manifest,
        "Hardware Counters Driver",
        &descriptors(&manifest, "Hardware Counters Driver"),
    )
    .unwrap();
    let sample = Sample {
        time: 5,
        frequency: 10_000_000,
        unix_millis: 0,
        instances: vec![
            record("0,0", vec![3; set.counters.len()]),
            record("0,1", vec![4; set.counters.len()]),
        ],
    };
    let single = Sample { instances: vec![record("", vec![1; 8])], ..sample.clone() };
    let objects = [
        perf_object::format_object(&object_data(&set, &sample)),
        perf_object::format_object(&object_data(&status, &single)),
    ];
    let mut buffer = perf_object::GuardedBuffer::new(8192);
    let result = perf_object::collect_into(&mut buffer, &objects);
    assert_eq!(perf_object::validate_collect(&buffer, &result), []);
}
