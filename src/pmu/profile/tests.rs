use super::*;
use crate::pmu::encoding::{EVTSEL_OS, EVTSEL_USR, evtsel_for};
use crate::settings::{REG_MULTI_SZ, REG_SZ, Rejection as Value};
use proptest::prelude::*;

fn units(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// A REG_MULTI_SZ of `lines`: each terminated, plus the final empty string.
fn multi_sz(lines: &[&str]) -> Vec<u16> {
    let mut data = Vec::new();
    for line in lines {
        data.extend(line.encode_utf16());
        data.push(0);
    }
    data.push(0);
    data
}

fn sz(text: &str) -> Vec<u16> {
    let mut data = units(text);
    data.push(0);
    data
}

fn value(kind: u32, units: &[u16]) -> Setting<'_> {
    Setting::Value { kind, units, odd: false }
}

fn select_all(
    vendor: Vendor,
    profile: Setting<'_>,
    events: Setting<'_>,
) -> (Selection, Vec<(usize, Rejection)>) {
    select_on(vendor, false, profile, events)
}

fn select_on(
    vendor: Vendor,
    hybrid: bool,
    profile: Setting<'_>,
    events: Setting<'_>,
) -> (Selection, Vec<(usize, Rejection)>) {
    let mut rejections = Vec::new();
    let selection = select(vendor, hybrid, profile, events, |_, line, why| rejections.push((line, why)));
    (selection, rejections)
}

fn custom(lines: &[&str], vendor: Vendor) -> (Selection, Vec<(usize, Rejection)>) {
    let profile = sz("custom");
    let events = multi_sz(lines);
    select_all(vendor, value(REG_SZ, &profile), value(REG_MULTI_SZ, &events))
}

#[test]
fn missing_values_select_the_default_profile() {
    let (selection, rejections) = select_all(Vendor::Intel, Setting::Missing, Setting::Missing);
    assert_eq!(selection, Selection::default());
    assert!(rejections.is_empty());
}

#[test]
fn profile_names_in_any_case_with_spaces() {
    for (text, profile) in
        [("default", Profile::Default), (" TopDown ", Profile::Topdown), ("Custom", Profile::Custom)]
    {
        let data = sz(text);
        let (selection, rejections) = select_all(Vendor::Amd, value(REG_SZ, &data), Setting::Missing);
        assert_eq!(selection.profile, profile, "{text:?}");
        assert!(rejections.is_empty());
    }
}

#[test]
fn a_bad_profile_value_falls_back_to_default_and_is_counted() {
    let unknown = sz("fastest");
    let dword = [1u16, 0];
    let cases = [
        (value(REG_SZ, &unknown), Rejection::UnknownProfile),
        (value(4, &dword), Rejection::Value(Value::WrongType { kind: 4 })),
        (Setting::TooLong, Rejection::Value(Value::TooLong)),
        (Setting::Failed(-1), Rejection::Value(Value::ReadFailed(-1))),
        (Setting::Value { kind: REG_SZ, units: &unknown, odd: true }, Rejection::Value(Value::Malformed)),
    ];
    for (setting, why) in cases {
        let (selection, rejections) = select_all(Vendor::Intel, setting, Setting::Missing);
        assert_eq!((selection.profile, selection.rejected), (Profile::Default, 1));
        assert_eq!(rejections, [(0, why)]);
    }
}

#[test]
fn valid_lines_become_custom_events_in_order() {
    let (selection, rejections) = custom(
        &[
            "event=0xC4,umask=0x00,cmask=0,inv=0,edge=0,name=branches",
            "event=0x3C, umask=1",
            " event = 14 , cmask=2,inv=1,edge=1 ",
        ],
        Vendor::Intel,
    );
    assert!(rejections.is_empty(), "{rejections:?}");
    let expected = [
        Encoding::new(0xC4, 0),
        Encoding::new(0x3C, 1),
        Encoding { cmask: 2, inv: true, edge: true, ..Encoding::new(14, 0) },
    ];
    assert_eq!(&selection.custom[..3], expected.map(Some));
    assert!(selection.custom[3..].iter().all(Option::is_none));
}

#[test]
fn custom_event_n_is_line_n_and_a_rejected_line_leaves_its_place_empty() {
    // An administrator reads "Custom Event 2" as the third line: a rejected second line must not move
    // the third into its place (counts would then be published under another event's name).
    let lines = ["event=0xC0", "event=0x1C0", "event=0xC5", "umask=1", "event=0xC4"];
    let (selection, rejections) = custom(&lines, Vendor::Intel);
    assert_eq!(rejections, [(2, Rejection::OutOfRange), (4, Rejection::MissingEvent)]);
    let events: Vec<Option<u16>> = selection.custom.iter().map(|e| e.map(|e| e.event)).collect();
    assert_eq!(events, [Some(0xC0), None, Some(0xC5), None, Some(0xC4), None, None, None]);
    assert_eq!(selection.rejected, 2);
}

#[test]
fn malformed_lines_are_rejected_and_the_rest_kept() {
    // Two values of eight lines at most (line 9 would be a ninth custom event).
    let first = [
        "event=0xC0",            // 1: fine
        "event=0x1C0",           // 2: 9-bit event on Intel
        "umask=3",               // 3: no event
        "event=0xC4,en=1",       // 4: the driver's bit, not the user's
        "event=0xC4,event=0xC5", // 5: twice
        "event=0xC4,cmask=256",  // 6: out of range
        "event=0xC4,inv=2",      // 7
        "event=0xC5",            // 8: fine
    ];
    let (selection, rejections) = custom(&first, Vendor::Intel);
    assert_eq!(
        rejections,
        [
            (2, Rejection::OutOfRange),
            (3, Rejection::MissingEvent),
            (4, Rejection::UnknownKey),
            (5, Rejection::DuplicateKey),
            (6, Rejection::OutOfRange),
            (7, Rejection::OutOfRange),
        ]
    );
    assert_eq!(selection.rejected, 6);
    assert_eq!(selection.custom[0].map(|e| e.event), Some(0xC0));
    assert!(selection.custom[1..7].iter().all(Option::is_none), "a rejected line's place stays empty");
    assert_eq!(selection.custom[7].map(|e| e.event), Some(0xC5), "the other lines are kept, in place");
    let second = [
        "event=C4",                                             // 1: hex without 0x
        "event=0xC4,name=",                                     // 2: empty name
        "event=0xC4,name=abcdefghijklmnopqrstuvwxyz0123456789", // 3: name too long
        "event",                                                // 4: no value
        "event=0x",                                             // 5
    ];
    let (selection, rejections) = custom(&second, Vendor::Intel);
    assert_eq!(
        rejections,
        [
            (1, Rejection::OutOfRange),
            (2, Rejection::OutOfRange),
            (3, Rejection::OutOfRange),
            (4, Rejection::UnknownKey),
            (5, Rejection::OutOfRange),
        ]
    );
    assert!(selection.custom.iter().all(Option::is_none));
}

#[test]
fn amd_takes_twelve_bit_events() {
    let (selection, rejections) = custom(&["event=0x1A0,umask=0x1E", "event=0x1000"], Vendor::Amd);
    assert_eq!(selection.custom[0].map(|e| e.event), Some(0x1A0));
    assert_eq!(rejections, [(2, Rejection::OutOfRange)]);
}

#[test]
fn usr_and_os_count_one_privilege_level_as_perf_does() {
    let lines = ["event=0xC0,usr=1,os=0", "event=0xC0,os=0", "event=0xC0,usr=0", "event=0xC0,usr=0,os=0"];
    let (selection, rejections) = custom(&lines, Vendor::Intel);
    assert_eq!(rejections, [(4, Rejection::CountsNothing)]);
    let levels: Vec<(bool, bool)> = selection.custom.iter().flatten().map(|e| (e.usr, e.os)).collect();
    assert_eq!(levels, [(true, false), (true, false), (false, true)]);
    let user_only = evtsel_for(Vendor::Intel, selection.custom[0].unwrap(), false);
    assert_eq!(user_only & (EVTSEL_USR | EVTSEL_OS), EVTSEL_USR);
    let kernel_only = evtsel_for(Vendor::Amd, selection.custom[2].unwrap(), true);
    assert_eq!(kernel_only & (EVTSEL_USR | EVTSEL_OS), EVTSEL_OS);
}

#[test]
fn counters_restricts_a_line_to_the_counters_it_names() {
    let lines = [
        "event=0xC0,counters=0-3",
        "event=0xC0, counters = 0+2 ",
        "event=0xC0,counters=7",
        "event=0xC0,counters=1-1+5-6",
        "event=0xC0,counters=8",   // 5: no such counter
        "event=0xC0,counters=3-1", // 6: empty range
        "event=0xC0,counters=",    // 7
        "event=0xC0,counters=0,1", // 8: a comma ends the key: "1" is no key=value pair
    ];
    let (selection, rejections) = custom(&lines, Vendor::Intel);
    assert_eq!(
        rejections,
        [
            (5, Rejection::OutOfRange),
            (6, Rejection::OutOfRange),
            (7, Rejection::OutOfRange),
            (8, Rejection::UnknownKey)
        ]
    );
    let masks: Vec<u8> = selection.custom.iter().flatten().map(|e| e.counters).collect();
    assert_eq!(masks, [0x0F, 0x05, 0x80, 0x62]);
    assert_eq!(custom(&["event=0xC0"], Vendor::Intel).0.custom[0].unwrap().counters, 0xFF);
}

#[test]
fn amd_events_that_need_a_counter_pair_are_refused() {
    let (selection, rejections) =
        custom(&["event=0xFFF", "event=0x003,umask=0xFF", "event=0x0C0"], Vendor::Amd);
    assert_eq!(rejections, [(1, Rejection::NeedsCounterPair), (2, Rejection::NeedsCounterPair)]);
    assert_eq!(selection.custom[2].map(|e| e.event), Some(0xC0), "line 2 is custom event 2");
    // Intel's event 03H is an ordinary event (LD_BLOCKS on its cores).
    assert!(custom(&["event=0x03,umask=0x02"], Vendor::Intel).1.is_empty());
}

#[test]
fn the_list_ends_at_its_first_empty_string() {
    // "event=0xC0\0\0event=0xC5\0\0": the second line follows the list's terminating empty string.
    let mut units: Vec<u16> = "event=0xC0".encode_utf16().collect();
    units.extend([0, 0]);
    units.extend("event=0xC5".encode_utf16());
    units.extend([0, 0]);
    let profile = sz("custom");
    let (selection, rejections) =
        select_all(Vendor::Intel, value(REG_SZ, &profile), value(REG_MULTI_SZ, &units));
    assert_eq!(selection.custom[0].map(|e| e.event), Some(0xC0));
    assert_eq!(selection.custom[1], None, "a line past the end of the list is not programmed");
    assert_eq!(rejections, [(3, Rejection::Value(Value::AfterEndOfList))]);
}

#[test]
fn more_events_than_counters_are_rejected() {
    let lines: Vec<String> = (0..10).map(|i| format!("event={}", 0xC0 + i)).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (selection, rejections) = custom(&lines, Vendor::Intel);
    assert!(selection.custom.iter().all(Option::is_some));
    assert_eq!(rejections, [(9, Rejection::TooManyEvents), (10, Rejection::TooManyEvents)]);
}

#[test]
fn custom_events_of_the_wrong_type_or_length_are_rejected_whole() {
    let profile = sz("custom");
    let single = sz("event=0xC0");
    for (events, why) in [
        (value(REG_SZ, &single), Rejection::Value(Value::WrongType { kind: REG_SZ })),
        (Setting::TooLong, Rejection::Value(Value::TooLong)),
    ] {
        let (selection, rejections) = select_all(Vendor::Intel, value(REG_SZ, &profile), events);
        assert_eq!(selection.profile, Profile::Custom);
        assert!(selection.custom.iter().all(Option::is_none));
        assert_eq!(rejections, [(0, why)]);
    }
}

#[test]
fn custom_events_are_read_only_for_the_custom_profile() {
    let profile = sz("topdown");
    let events = multi_sz(&["event=0xC0", "junk"]);
    let (selection, rejections) =
        select_all(Vendor::Intel, value(REG_SZ, &profile), value(REG_MULTI_SZ, &events));
    assert_eq!(selection.profile, Profile::Topdown);
    assert!(selection.custom.iter().all(Option::is_none) && rejections.is_empty());
}

/// Reserved bits of the event selects: Intel IA32_PERFEVTSELx bits 63:32 (and AnyThread, bit 21,
/// which the driver never sets), AMD PerfCtl bits 63:42, 39:36, 21 and 19 (Intel SDM Vol. 3B,
/// "IA32_PERFEVTSELx MSRs"; AMD APM Vol. 2, "PerfEvtSeln").
const INTEL_RESERVED: u64 = 0xFFFF_FFFF_0000_0000 | (1 << 21);
const AMD_RESERVED: u64 = 0xFFFF_FC00_0000_0000 | (0xF << 36) | (1 << 21) | (1 << 19);

proptest! {
    #[test]
    fn no_line_puts_a_reserved_bit_into_an_event_select(
        line in "[a-z=,+0-9xA-F -]{0,48}",
        amd in any::<bool>(),
        pmi in any::<bool>(),
    ) {
        let vendor = if amd { Vendor::Amd } else { Vendor::Intel };
        let (selection, _) = custom(&[&line], vendor);
        if let Some(encoding) = selection.custom[0] {
            let value = evtsel_for(vendor, encoding, pmi);
            let reserved = if amd { AMD_RESERVED } else { INTEL_RESERVED };
            prop_assert_eq!(value & reserved, 0, "{:?} -> {:#x}", encoding, value);
        }
    }

    #[test]
    fn every_field_value_in_range_is_accepted(
        event in 0u32..=0xFF, umask in 0u32..=0xFF, cmask in 0u32..=0xFF, inv in 0u32..=1, edge in 0u32..=1,
    ) {
        let line = format!("event={event:#x},umask={umask},cmask={cmask:#X},inv={inv},edge={edge}");
        let (selection, rejections) = custom(&[&line], Vendor::Intel);
        prop_assert!(rejections.is_empty());
        let expected = Encoding { cmask: cmask as u8, inv: inv == 1, edge: edge == 1, ..Encoding::new(event as u16, umask as u8) };
        prop_assert_eq!(selection.custom[0], Some(expected));
    }
}

#[test]
fn a_hybrid_processor_takes_model_specific_events_only_for_a_named_core_type() {
    let lines = [
        "event=0xC4,umask=0x00,name=branches",
        "event=0x71,umask=0x00,name=fe bound",
        "event=0x71,umask=0x00,core=Efficient,name=fe bound",
        "event=0x9C,umask=0x01,core=performance",
        "event=0xC0,core=both",
        "event=0x2E,umask=0x41,core=efficient,core=performance",
    ];
    let profile = sz("custom");
    let events = multi_sz(&lines);
    let (selection, rejections) =
        select_on(Vendor::Intel, true, value(REG_SZ, &profile), value(REG_MULTI_SZ, &events));
    assert_eq!(
        rejections,
        [(2, Rejection::ModelSpecificNeedsCore), (5, Rejection::OutOfRange), (6, Rejection::DuplicateKey)]
    );
    let accepted: Vec<(u16, u8)> =
        selection.custom.iter().flatten().map(|encoding| (encoding.event, encoding.core_types)).collect();
    // An architectural event runs on every core type; the others on the one they name (bit 2
    // efficient, bit 1 performance).
    assert_eq!(accepted, [(0xC4, 0b111), (0x71, 0b100), (0x9C, 0b010)]);
    // Not hybrid: a model-specific event needs no core type, and `core=` restricts nothing there.
    let (selection, rejections) =
        select_on(Vendor::Intel, false, value(REG_SZ, &profile), value(REG_MULTI_SZ, &events));
    assert_eq!(rejections, [(5, Rejection::OutOfRange), (6, Rejection::DuplicateKey)]);
    assert_eq!(selection.custom.iter().flatten().count(), 4);
}

#[test]
fn the_debug_output_names_a_value_rejection_by_its_own_name() {
    // The debug output's "Parameters\Profile rejected (...): WrongType { kind: 4 }" reads as before
    // the value-level rejections moved to crate::settings.
    assert_eq!(format!("{:?}", Rejection::Value(Value::WrongType { kind: 4 })), "WrongType { kind: 4 }");
    assert_eq!(format!("{:?}", Rejection::Value(Value::ReadFailed(-1))), "ReadFailed(-1)");
    assert_eq!(format!("{:?}", Rejection::Value(Value::AfterEndOfList)), "AfterEndOfList");
    assert_eq!(format!("{:?}", Rejection::NeedsCounterPair), "NeedsCounterPair");
}

#[test]
fn custom_selects_are_the_programmed_select_values_without_int_and_zero_for_rejected_lines() {
    // Line 2 is rejected (no event=): its select reads 0, the others keep their numbers.
    let lines = multi_sz(&[
        "event=0x2E,umask=0x41,name=llc-misses",
        "event=0xC5,umask=0x00,cmask=1,inv=1,edge=1,name=no-mispredict-cycles",
        "umask=0x01",
        "event=0x0E,umask=0x01,usr=0,name=uops-issued-kernel",
    ]);
    let (selection, rejected) =
        select_all(Vendor::Intel, value(REG_SZ, &sz("custom")), value(REG_MULTI_SZ, &lines));
    assert_eq!(rejected.len(), 1);
    let selects = selection.custom_selects(Vendor::Intel);
    // IA32_PERFEVTSELx: event | umask << 8 | USR | OS | EN (bit 22), no INT (bit 20).
    assert_eq!(selects[0], 0x2E | 0x41 << 8 | 1 << 16 | 1 << 17 | 1 << 22);
    assert_eq!(selects[1], 0xC5 | 1 << 16 | 1 << 17 | 1 << 18 | 1 << 22 | 1 << 23 | 1 << 24);
    assert_eq!(selects[2], 0);
    assert_eq!(selects[3], evtsel_for(Vendor::Intel, selection.custom[3].unwrap(), false));
    assert_eq!(selects[3] & (EVTSEL_USR | EVTSEL_OS), EVTSEL_OS);
    assert_eq!(&selects[4..], &[0; 4]);
    // Outside the custom profile every select reads 0.
    let (default, _) = select_all(Vendor::Intel, value(REG_SZ, &sz("default")), value(REG_MULTI_SZ, &lines));
    assert_eq!(default.custom_selects(Vendor::Intel), [0; CUSTOM_EVENTS]);
}
