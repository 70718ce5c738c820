//! String resource ids: CTRPP's numbering (see `element_string_ids` for the rule and its sources),
//! checked against real CTRPP output.

use counter_manifest::{
    AssignedIds, ElementIds, SetIds, StringKind, assign_string_ids, compile, element_string_ids, parse,
    string_resources,
};

fn ids(name: u32, locked_name: u32, description: u32) -> ElementIds {
    ElementIds { name, locked_name, description }
}

/// A counterset with `counters` counters and no nameID/descriptionID anywhere.
fn plain_set(counters: usize) -> SetIds {
    SetIds { name_id: None, description_id: None, counters: vec![(None, None); counters] }
}

#[test]
fn each_element_takes_four_ids_of_which_the_first_is_unused() {
    assert_eq!(element_string_ids(0, 0, None, None), ids(1, 2, 3));
    assert_eq!(element_string_ids(0, 1, None, None), ids(5, 6, 7));
    assert_eq!(element_string_ids(0, 10, None, None), ids(41, 42, 43));
    // resourceBase is the start index (the unverified part of the rule: see element_string_ids).
    assert_eq!(element_string_ids(1000, 0, None, None), ids(1001, 1002, 1003));
    assert_eq!(element_string_ids(1000, 30, None, None), ids(1121, 1122, 1123));
}

#[test]
fn explicit_ids_replace_the_positional_ones() {
    assert_eq!(element_string_ids(1000, 3, Some(100), Some(102)), ids(100, 101, 102));
    assert_eq!(element_string_ids(1000, 3, Some(100), None), ids(100, 101, 1015));
    assert_eq!(element_string_ids(1000, 3, None, Some(7)), ids(1013, 1014, 7));
    // An element with explicit ids still takes its position: the next element is where it would be.
    let sets = [SetIds { name_id: Some(500), description_id: Some(502), counters: vec![(None, None)] }];
    let assigned = assign_string_ids(0, &sets);
    assert_eq!(assigned[0].set, ids(500, 501, 502));
    assert_eq!(assigned[0].counters, [ids(5, 6, 7)]);
}

/// The Vista SDK's PerflibV2SampleProvider (CTRPP output committed with it): counterSet 1 with counters
/// id 1 and 2, counterSet 2 with counters id 3 to 7. The second counterSet is at 13 (position 3), not
/// at a place derived from counter ids.
#[test]
fn numbering_follows_document_position_across_countersets() {
    let assigned = assign_string_ids(0, &[plain_set(2), plain_set(5)]);
    assert_eq!(assigned[0], AssignedIds { set: ids(1, 2, 3), counters: vec![ids(5, 6, 7), ids(9, 10, 11)] });
    assert_eq!(assigned[1].set, ids(13, 14, 15));
    assert_eq!(
        assigned[1].counters,
        [ids(17, 18, 19), ids(21, 22, 23), ids(25, 26, 27), ids(29, 30, 31), ids(33, 34, 35)]
    );
}

/// nodejs/node's node_perfctr_provider.man (1 counterSet, 10 counters) and the CTRPP output committed
/// as tools/msvs/genfiles/node_perfctr_provider.rc: the last counter's strings are 41, 42, 43.
#[test]
fn node_js_provider() {
    let assigned = assign_string_ids(0, &[plain_set(10)]);
    assert_eq!(assigned[0].set, ids(1, 2, 3));
    assert_eq!(assigned[0].counters[9], ids(41, 42, 43));
}

/// STEllAR-GROUP/hpx examples/heartbeat/heartbeat.man, made kernel-mode with structs (which CTRPP's
/// numbering ignores) and resourceBase="0" (the same as none).
const HPX: &str = r#"<?xml version='1.0' encoding='utf-8' standalone='yes'?>
<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">
  <instrumentation>
    <counters xmlns="http://schemas.microsoft.com/win/2005/12/counters" schemaVersion="1.1">
      <provider callback="custom" applicationIdentity="heartbeat.sys" providerName="HPXHeartBeat"
          providerType="kernelMode" providerGuid="{1178C091-4A8D-4657-B656-CE030059C34F}" resourceBase="0">
        <counterSet guid="{9A7A620E-19D0-4697-B6FA-A803845D7329}" uri="Hpx.Counters.Queue.Length"
            name="Queue Length" description="This counter set displays various HPX queue length"
            symbol="QueueLength" instances="multipleAggregate">
          <structs><struct name="Lengths"/></structs>
          <counter id="1" uri="Hpx.Counters.Queue.Length.Console" symbol="Console"
              name="Console Thread Queue Length"
              description="This counter displays the overall current thread queue lengths on the console"
              type="perf_counter_rawcount" detailLevel="standard" struct="Lengths" field="Console"/>
          <counter id="2" uri="Hpx.Counters.Queue.Length.Console.Avg" symbol="ConsoleAverage"
              name="Average Console Thread Queue Length"
              description="This counter displays the average thread queue length on the console"
              type="perf_counter_rawcount" aggregate="avg" detailLevel="standard" struct="Lengths"
              field="ConsoleAverage"/>
        </counterSet>
      </provider>
    </counters>
  </instrumentation>
</instrumentationManifest>
"#;

/// hpx_counters.rc as CTRPP wrote it for heartbeat.man (the whole file).
const HPX_CTRPP_RC: &str = r#"STRINGTABLE
BEGIN
    1 "Queue Length"
    2 "Queue Length" // {Locked} means don't localize
    3 "This counter set displays various HPX queue length"
    5 "Console Thread Queue Length"
    6 "Console Thread Queue Length" // {Locked} means don't localize
    7 "This counter displays the overall current thread queue lengths on the console"
    9 "Average Console Thread Queue Length"
    10 "Average Console Thread Queue Length" // {Locked} means don't localize
    11 "This counter displays the average thread queue length on the console"
END
"#;

#[test]
fn the_string_table_is_ctrpps_for_the_hpx_manifest() {
    let rc = compile("heartbeat.man", HPX, None).unwrap().rc;
    let start = rc.find("STRINGTABLE\n").unwrap();
    let end = start + rc[start..].find("END\n").unwrap() + "END\n".len();
    assert_eq!(&rc[start..end], HPX_CTRPP_RC);
}

#[test]
fn the_real_manifest_numbering() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/pmupcw.man");
    let manifest = parse("manifests/pmupcw.man", &std::fs::read_to_string(path).unwrap()).unwrap();
    // No resourceBase: the numbering verified against real CTRPP output starts at 1.
    assert_eq!(manifest.provider.resource_base, 0);
    let strings = string_resources(&manifest);
    // Every counterset and counter, 3 strings each.
    let elements = manifest.counter_sets.len()
        + manifest.counter_sets.iter().map(|set| set.counters.len()).sum::<usize>();
    assert_eq!(strings.len(), 3 * elements);
    let first: Vec<(u32, &str, StringKind)> =
        strings.iter().take(3).map(|s| (s.id, s.text.as_str(), s.kind)).collect();
    assert_eq!(
        first,
        [
            (1, "Hardware Counters", StringKind::Name),
            (2, "Hardware Counters", StringKind::LockedName),
            (3, first[2].1, StringKind::Description),
        ]
    );
    // The second counterSet follows the first one and its counters.
    let position = 1 + manifest.counter_sets[0].counters.len() as u32;
    let driver = strings.iter().find(|s| s.text == "Hardware Counters Driver").unwrap();
    assert_eq!((driver.id, driver.set, driver.counter), (4 * position + 1, 1, None));
    let last = strings.last().unwrap();
    let last_position = elements as u32 - 1;
    assert_eq!((last.id, last.kind), (4 * last_position + 3, StringKind::Description));
    let last_counter = manifest.counter_sets.last().unwrap().counters.last().unwrap();
    assert_eq!(Some(&last.text), last_counter.description.as_ref());
    // Ascending and unique.
    assert!(strings.windows(2).all(|w| w[0].id < w[1].id));
}
