//! Malformed manifests: each must fail with one exact `file:line:column: reason` message whose
//! position is the element or attribute at fault.
//!
//! Each case edits the valid manifest [`BASE`] (one edit per case) and names the expected position by a
//! piece of text that starts there, so the line and column are those of the offending attribute or
//! element in the edited text. [`positions_are_where_the_text_is`] pins a few of them as plain numbers.

use counter_manifest::parse;

/// A valid manifest: one counterset with a fraction/base pair, one single-instance counterset.
const BASE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">
  <instrumentation>
    <counters xmlns="http://schemas.microsoft.com/win/2005/12/counters" schemaVersion="1.1">
      <provider providerGuid="{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13}" providerName="t"
          providerType="kernelMode" applicationIdentity="t.sys" resourceBase="1000">
        <counterSet guid="{8C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E}" uri="t.Set" symbol="Set"
            name="Set" description="A set." instances="multiple">
          <structs>
            <struct name="Values"/>
          </structs>
          <counter id="0" uri="t.Set.Rate" symbol="Rate" name="Rate/sec" description="Rate."
              type="perf_counter_bulk_count" detailLevel="standard" struct="Values" field="Count"/>
          <counter id="1" uri="t.Set.Ratio" symbol="Ratio" name="% Ratio" description="Ratio."
              type="perf_sample_fraction" detailLevel="standard" struct="Values" field="Part"/>
          <counter id="2" uri="t.Set.RatioBase" symbol="RatioBase" name="% Ratio Base" description="Base."
              type="perf_sample_base" detailLevel="advanced" struct="Values" field="Whole"/>
          <counter id="3" uri="t.Set.Total" symbol="Total" name="Total" description="Total."
              type="perf_counter_large_rawcount" detailLevel="advanced" struct="Values" field="Count"/>
        </counterSet>
        <counterSet guid="{2F6A9B1C-3D4E-4F50-8A61-B72C83D94E05}" uri="t.Status" symbol="Status"
            name="Status" description="Status." instances="single">
          <structs>
            <struct name="StatusValues"/>
          </structs>
          <counter id="0" uri="t.Status.State" symbol="State" name="State" description="State."
              type="perf_counter_rawcount" detailLevel="standard" struct="StatusValues" field="State"/>
        </counterSet>
      </provider>
    </counters>
  </instrumentation>
</instrumentationManifest>
"#;

const FILE: &str = "bad.man";

/// `BASE` with the one occurrence of `from` replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "`{from}` must occur exactly once in BASE");
    BASE.replacen(from, to, 1)
}

/// `bad.man:LINE:COLUMN` of the one occurrence of `marker` in `text` (1-based; column in characters).
fn at(text: &str, marker: &str) -> String {
    assert_eq!(text.matches(marker).count(), 1, "`{marker}` must occur exactly once");
    let offset = text.find(marker).unwrap();
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap().chars().count() + 1;
    format!("{FILE}:{line}:{column}")
}

/// The error message `parse` gives for `text`.
fn error(text: &str) -> String {
    match parse(FILE, text) {
        Ok(_) => panic!("the manifest was accepted:\n{text}"),
        Err(error) => error.to_string(),
    }
}

/// Asserts that `text` fails with `reason` at the start of `marker`.
fn fails(text: &str, marker: &str, reason: &str) {
    assert_eq!(error(text), format!("{}: {reason}", at(text, marker)));
}

#[test]
fn the_base_manifest_is_valid() {
    let manifest = parse(FILE, BASE).unwrap();
    assert_eq!(manifest.counter_sets.len(), 2);
}

#[test]
fn positions_are_where_the_text_is() {
    // The same positions as plain numbers, so `at` itself is checked.
    let text = edit(r#"type="perf_sample_base""#, r#"type="perf_bogus""#);
    assert_eq!(at(&text, r#"type="perf_bogus""#), "bad.man:17:15");
    assert_eq!(error(&text), "bad.man:17:15: unknown counter type `perf_bogus`");
    let text = edit(r#"<counter id="3""#, r#"<counter id="64""#);
    assert_eq!(
        error(&text),
        "bad.man:18:20: counter id 64 is out of range: PCW's counter mask has 64 bits, so ids are 0..=63"
    );
}

#[test]
fn malformed_xml() {
    // An unclosed attribute quote: roxmltree's position, roxmltree's reason.
    let text = edit(r#"symbol="Total" name="Total""#, r#"symbol="Total name="Total""#);
    assert_eq!(error(&text), "bad.man:18:65: malformed XML: expected a whitespace not 'T'");
    // A closing tag that does not match.
    let text = edit(
        "</structs>\n          <counter id=\"0\" uri=\"t.Set.Rate\"",
        "</struct>\n          <counter id=\"0\" uri=\"t.Set.Rate\"",
    );
    assert_eq!(error(&text), "bad.man:11:11: malformed XML: expected 'structs' tag, not 'struct'");
}

#[test]
fn missing_attribute() {
    let text = edit(r#" struct="Values" field="Part""#, r#" struct="Values""#);
    fails(&text, r#"<counter id="1""#, "<counter> is missing the required attribute `field`");
    let text = edit(r#" applicationIdentity="t.sys""#, "");
    fails(&text, "<provider", "<provider> is missing the required attribute `applicationIdentity`");
    // (`instances` is optional: the schema's default is single.)
    let text = edit(r#" uri="t.Status""#, "");
    fails(&text, r#"<counterSet guid="{2F6A"#, "<counterSet> is missing the required attribute `uri`");
}

#[test]
fn unknown_counter_type() {
    let text = edit(r#"type="perf_counter_rawcount""#, r#"type="perf_counter_rawcnt""#);
    fails(&text, r#"type="perf_counter_rawcnt""#, "unknown counter type `perf_counter_rawcnt`");
    let text = edit(r#"type="perf_counter_rawcount""#, r#"type="perf_counter_text""#);
    fails(
        &text,
        r#"type="perf_counter_text""#,
        "counter type `perf_counter_text` is not supported by counter-manifest",
    );
}

#[test]
fn duplicate_counter_id() {
    let text = edit(r#"<counter id="3""#, r#"<counter id="1""#);
    fails(
        &text,
        r#"id="1" uri="t.Set.Total""#,
        "duplicate counter id 1: counter `Ratio` at line 14 has it too",
    );
}

#[test]
fn counter_names_differing_only_in_case() {
    let text = edit(r#"name="Total""#, r#"name="RATE/SEC""#);
    fails(
        &text,
        r#"name="RATE/SEC""#,
        "counter name `RATE/SEC` differs only in case from `Rate/sec` (counter `Rate` at line 12); PDH compares \
         counter names ignoring case",
    );
}

#[test]
fn duplicate_counter_symbol_and_uri() {
    let text = edit(r#"symbol="Total""#, r#"symbol="Rate""#);
    fails(
        &text,
        r#"symbol="Rate" name="Total""#,
        "duplicate counter symbol `Rate`: counter at line 12 has it too",
    );
    let text = edit(r#"uri="t.Set.Total""#, r#"uri="t.Set.Rate2""#).replacen(
        r#"uri="t.Set.Rate2""#,
        r#"uri="t.Set.Rate""#,
        1,
    );
    fails(
        &text,
        r#"uri="t.Set.Rate" symbol="Total""#,
        "duplicate counter uri `t.Set.Rate`: counter at line 12 has it too",
    );
}

#[test]
fn unknown_struct_reference() {
    let text = edit(r#"struct="Values" field="Part""#, r#"struct="Value" field="Part""#);
    fails(
        &text,
        r#"struct="Value""#,
        "struct `Value` is not declared in this counterSet's <structs> (it declares `Values`)",
    );
}

#[test]
fn base_counter_not_right_after_its_counter() {
    // The base moved before the fraction it serves.
    let fraction = "          <counter id=\"1\" uri=\"t.Set.Ratio\" symbol=\"Ratio\" name=\"% Ratio\" description=\"Ratio.\"\n              type=\"perf_sample_fraction\" detailLevel=\"standard\" struct=\"Values\" field=\"Part\"/>\n";
    let base = "          <counter id=\"2\" uri=\"t.Set.RatioBase\" symbol=\"RatioBase\" name=\"% Ratio Base\" description=\"Base.\"\n              type=\"perf_sample_base\" detailLevel=\"advanced\" struct=\"Values\" field=\"Whole\"/>\n";
    let text = edit(&format!("{fraction}{base}"), &format!("{base}{fraction}"));
    fails(
        &text,
        r#"type="perf_sample_base""#,
        "base counter `RatioBase` (perf_sample_base) must come immediately after the counter it serves \
         (perf_sample_fraction), or immediately before it if that counter names it with baseID; it follows \
         `Rate` (perf_counter_bulk_count)",
    );
}

#[test]
fn base_counter_of_the_wrong_kind() {
    let text = edit(r#"type="perf_counter_rawcount""#, r#"type="perf_raw_base""#);
    fails(
        &text,
        r#"type="perf_raw_base""#,
        "base counter `State` (perf_raw_base) must come immediately after the counter it serves \
         (perf_raw_fraction), or immediately before it if that counter names it with baseID; it is the first \
         counter of the counterSet",
    );
}

#[test]
fn counter_needing_a_base_not_followed_by_one() {
    let text = edit(r#"type="perf_sample_base""#, r#"type="perf_counter_rawcount""#);
    fails(
        &text,
        r#"type="perf_sample_fraction""#,
        "counter `Ratio` (perf_sample_fraction) must be immediately followed by its base, a perf_sample_base \
         counter; the next counter, `RatioBase`, is perf_counter_rawcount",
    );
    let text = edit(r#"type="perf_counter_rawcount""#, r#"type="perf_average_timer""#);
    fails(
        &text,
        r#"type="perf_average_timer""#,
        "counter `State` (perf_average_timer) must be immediately followed by its base, a perf_average_base \
         counter; it is the last counter of the counterSet",
    );
}

#[test]
fn bad_guid() {
    let text = edit("{2F6A9B1C-3D4E-4F50-8A61-B72C83D94E05}", "{2F6A9B1C-3D4E-4F50-8A61-B72C83D94E0}");
    fails(
        &text,
        r#"guid="{2F6A"#,
        "guid `{2F6A9B1C-3D4E-4F50-8A61-B72C83D94E0}` is not a GUID of the form \
         {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}",
    );
    let text = edit("{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13}", "5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13");
    fails(
        &text,
        "providerGuid=",
        "providerGuid `5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13` is not a GUID of the form \
         {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}",
    );
}

#[test]
fn counter_id_above_63() {
    let text = edit(r#"<counter id="0" uri="t.Status.State""#, r#"<counter id="99" uri="t.Status.State""#);
    fails(
        &text,
        r#"id="99""#,
        "counter id 99 is out of range: PCW's counter mask has 64 bits, so ids are 0..=63",
    );
    let text = edit(r#"<counter id="3""#, r#"<counter id="three""#);
    fails(&text, r#"id="three""#, "`id` must be an unsigned 32-bit number, not `three`");
}

#[test]
fn bad_detail_level() {
    let text = edit(
        r#"detailLevel="advanced" struct="Values" field="Whole""#,
        r#"detailLevel="expert" struct="Values" field="Whole""#,
    );
    fails(&text, r#"detailLevel="expert""#, "detailLevel must be standard or advanced, not `expert`");
}

#[test]
fn two_structs() {
    let text =
        edit(r#"<struct name="StatusValues"/>"#, r#"<struct name="StatusValues"/><struct name="More"/>"#);
    fails(
        &text,
        r#"<struct name="More"/>"#,
        "counterSet `Status` declares a second struct: each counterSet has exactly one struct (counter-manifest \
         lays out one data block per counterSet)",
    );
}

#[test]
fn no_struct() {
    let text =
        edit("<structs>\n            <struct name=\"StatusValues\"/>\n          </structs>", "<structs/>");
    fails(
        &text,
        "<structs/>",
        "counterSet `Status` declares no struct: each counterSet has exactly one struct (counter-manifest lays \
         out one data block per counterSet)",
    );
}

#[test]
fn shared_field_with_different_sizes() {
    let text = edit(r#"type="perf_counter_bulk_count""#, r#"type="perf_counter_counter""#);
    fails(
        &text,
        r#"field="Count"/>
        </counterSet>"#,
        "field `Count` is 8 bytes for counter `Total` (perf_counter_large_rawcount) but 4 bytes for counter \
         `Rate` (perf_counter_counter, line 12); counters sharing a field must have the same size",
    );
}

#[test]
fn field_not_a_c_identifier() {
    let text = edit(r#"field="State""#, r#"field="State-Now""#);
    fails(&text, r#"field="State-Now""#, "field `State-Now` is not a C identifier");
    let text = edit(r#"field="State""#, r#"field="Type""#);
    fails(&text, r#"field="Type""#, "field `Type` cannot name a Rust field: `type` is a Rust keyword");
    let text = edit(r#"field="State""#, r#"field="_1st""#);
    fails(&text, r#"field="_1st""#, "field `_1st` cannot name a Rust field: `1st` starts with a digit");
}

#[test]
fn bad_aggregate_and_instances() {
    let text = edit(
        r#"field="Count"/>
          <counter id="1""#,
        r#"field="Count" aggregate="total"/>
          <counter id="1""#,
    );
    fails(
        &text,
        r#"aggregate="total""#,
        "aggregate must be one of sum, avg, min, max, undefined, not `total`",
    );
    let text = edit(r#"instances="multiple""#, r#"instances="many""#);
    fails(
        &text,
        r#"instances="many""#,
        "instances must be one of single, multiple, globalAggregate, multipleAggregate, globalAggregateHistory, \
         instanceAggregate, not `many`",
    );
}

#[test]
fn unknown_attribute() {
    let text = edit(
        r#"detailLevel="standard" struct="StatusValues""#,
        r#"detailevel="standard" struct="StatusValues""#,
    );
    fails(&text, r#"detailevel="standard""#, "unknown attribute `detailevel` on <counter>");
}

#[test]
fn duplicate_countersets() {
    let text = edit(
        r#"uri="t.Status" symbol="Status"
            name="Status""#,
        r#"uri="t.Status" symbol="Status"
            name="set""#,
    );
    fails(
        &text,
        r#"name="set""#,
        "counterSet name `set` is already used by the counterSet at line 7 (names are compared ignoring case)",
    );
    let text = edit("{2F6A9B1C-3D4E-4F50-8A61-B72C83D94E05}", "{8c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e}");
    fails(
        &text,
        r#"guid="{8c1d"#,
        "counterSet guid `{8c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e}` is already used by the counterSet at line 7",
    );
}

#[test]
fn user_mode_provider() {
    let text = edit(r#"providerType="kernelMode""#, r#"providerType="userMode""#);
    fails(
        &text,
        r#"providerType="userMode""#,
        "providerType must be `kernelMode` (the generated code registers with PcwRegister), not `userMode`",
    );
}

#[test]
fn colliding_string_resource_ids() {
    // The first counterSet's name is 1001 (resourceBase 1000, position 0).
    let text =
        edit(r#"name="State" description="State.""#, r#"name="State" nameID="1001" description="State.""#);
    fails(
        &text,
        r#"nameID="1001""#,
        "the name of counter `State` of counterSet `Status` gets resource id 1001, already used by the name of \
         counterSet `Set`",
    );
}

#[test]
fn string_resource_ids_beyond_16_bits() {
    // Position 1 (counter `Rate`) gets 65530 + 4 + 1..3: its locked name is the first id past 65535.
    let text = edit(r#"resourceBase="1000""#, r#"resourceBase="65530""#);
    fails(
        &text,
        r#"<counter id="0" uri="t.Set.Rate""#,
        "the locked copy of the name of counter `Rate` of counterSet `Set` gets resource id 65536, beyond a string \
         table's 65535 (lower resourceBase or the nameID/descriptionID)",
    );
}

#[test]
fn control_character_in_a_name() {
    let text = edit(r#"name="Total""#, r#"name="To&#9;tal""#);
    fails(&text, r#"name="To&#9;tal""#, "`name` contains the control character U+0009");
}

/// BASE with a string table for culture `culture` holding `strings` (`<string>` elements).
fn with_strings(text: &str, culture: &str, strings: &str) -> String {
    let end = "  </instrumentation>\n</instrumentationManifest>\n";
    assert!(text.ends_with(end));
    let localization = format!(
        "  </instrumentation>\n  <localization>\n    <resources culture=\"{culture}\">\n      <stringTable>\n        \
         {strings}\n      </stringTable>\n    </resources>\n  </localization>\n</instrumentationManifest>\n"
    );
    format!("{}{localization}", &text[..text.len() - end.len()])
}

#[test]
fn string_reference_without_a_string_table() {
    let text = edit(r#"name="Rate/sec""#, r#"name="$(string.Rate)""#);
    fails(
        &text,
        r#"name="$(string.Rate)""#,
        "`name` refers to string `Rate`, but the manifest has no <localization> string table",
    );
}

#[test]
fn undefined_string_reference() {
    let text = with_strings(
        &edit(r#"name="Rate/sec""#, r#"name="$(string.Rate)""#),
        "en-US",
        r#"<string id="Other" value="Other"/>"#,
    );
    fails(
        &text,
        r#"name="$(string.Rate)""#,
        "`name` refers to string `Rate`, which the en-US string table (<resources> at line 33) does not define",
    );
    // Defined only in another culture than the one used.
    let text = with_strings(
        &edit(r#"description="A set.""#, r#"description="$(string.Set)""#),
        "en-US",
        r#"<string id="Rate" value="Rate"/>"#,
    );
    fails(
        &text,
        r#"description="$(string.Set)""#,
        "`description` refers to string `Set`, which the en-US string table (<resources> at line 33) does not \
         define",
    );
}

#[test]
fn malformed_string_reference() {
    let text = edit(r#"name="Rate/sec""#, r#"name="$(string.Rate""#);
    fails(
        &text,
        r#"name="$(string.Rate""#,
        "`name` is `$(string.Rate`, not a string reference: a reference is the whole value, `$(string.ID)`",
    );
    let text = edit(r#"name="Rate/sec""#, r#"name="Rate $(string.Rate)""#);
    fails(
        &text,
        r#"name="Rate $(string.Rate)""#,
        "`name` is `Rate $(string.Rate)`, not a string reference: a reference is the whole value, `$(string.ID)`",
    );
}

#[test]
fn duplicate_string_id_in_the_string_table() {
    let text = with_strings(
        &edit(r#"name="Rate/sec""#, r#"name="$(string.Rate)""#),
        "en-US",
        r#"<string id="Rate" value="Rate"/><string id="Rate" value="Again"/>"#,
    );
    fails(
        &text,
        r#"<string id="Rate" value="Again"/>"#,
        "string `Rate` is defined twice in this string table",
    );
}

#[test]
fn resolved_string_is_checked_like_a_literal() {
    let text = with_strings(
        &edit(r#"name="Total""#, r#"name="$(string.Total)""#),
        "en-US",
        r#"<string id="Total" value="RATE/SEC"/>"#,
    );
    fails(
        &text,
        r#"name="$(string.Total)""#,
        "counter name `RATE/SEC` differs only in case from `Rate/sec` (counter `Rate` at line 12); PDH compares \
         counter names ignoring case",
    );
}

#[test]
fn counter_without_name_and_without_no_display() {
    let text = edit(r#" name="Total" description="Total.""#, "");
    fails(
        &text,
        r#"<counter id="3""#,
        "<counter> has no `name` and no `description`: only a counter with the noDisplay attribute may omit them",
    );
    let text = edit(r#" name="Total""#, "");
    fails(&text, r#"<counter id="3""#, "<counter> is missing the required attribute `name`");
}

/// BASE with the base counter RatioBase made noDisplay, without `name_and_description`.
fn nameless_ratio_base(name_and_description: &str) -> String {
    edit(
        &format!(
            r#"symbol="RatioBase"{name_and_description}
              type="perf_sample_base" detailLevel="advanced" struct="Values" field="Whole"/>"#
        ),
        r#"symbol="RatioBase"
              type="perf_sample_base" detailLevel="advanced" struct="Values" field="Whole">
            <counterAttributes><counterAttribute name="noDisplay"/></counterAttributes>
          </counter>"#,
    )
}

#[test]
fn nameless_counter_whose_position_would_move_later_strings() {
    let text = nameless_ratio_base(r#" name="% Ratio Base" description="Base.""#);
    fails(
        &text,
        r#"<counter id="2""#,
        "counter `RatioBase` has no name and no description, and whether CTRPP still counts such a counter when \
         it numbers string resources is not known: the strings of the 3 elements after it would move if it \
         does. Give it a name and a description (a noDisplay counter's strings are never shown), or give every \
         element after it a nameID and a descriptionID",
    );
}

#[test]
fn no_display_counter_with_a_name_but_no_description() {
    let text = nameless_ratio_base(r#" name="% Ratio Base" description="Base.""#)
        .replace(r#"symbol="RatioBase""#, r#"symbol="RatioBase" name="% Ratio Base""#);
    fails(
        &text,
        r#"<counter id="2""#,
        "counter `RatioBase` has a name but no description: a noDisplay counter may omit both or neither (what \
         CTRPP writes for one of them alone is not known)",
    );
}

#[test]
fn base_counter_serving_two_fractions() {
    // Ratio (no baseID) takes the base after it; Again names the same base, right before it.
    let text = edit(
        r#"field="Whole"/>"#,
        r#"field="Whole"/>
          <counter id="4" uri="t.Set.Again" symbol="Again" name="% Again" description="Again." baseID="2"
              type="perf_sample_fraction" detailLevel="standard" struct="Values" field="Again"/>"#,
    );
    fails(
        &text,
        r#"baseID="2""#,
        "base counter `RatioBase` already serves `Ratio` (line 14): each fraction needs a base of its own",
    );
}

#[test]
fn provider_type_absent_is_user_mode() {
    let text = edit(r#" providerType="kernelMode""#, "");
    fails(
        &text,
        "<provider",
        "<provider> has no providerType, which the schema reads as `userMode`; counter-manifest generates \
         kernel-mode code (PcwRegister): set providerType=\"kernelMode\"",
    );
}

#[test]
fn counter_symbol_that_makes_no_rust_constant() {
    let text = edit(r#"symbol="Total""#, r#"symbol="_""#);
    fails(
        &text,
        r#"<counter id="3""#,
        "counter symbol `_` gives no Rust constant (it has no ASCII letters or digits)",
    );
}

#[test]
fn counter_name_that_makes_no_rust_constant() {
    let text = edit(r#"symbol="Total" name="Total""#, r#"name="1st Total""#);
    fails(
        &text,
        r#"<counter id="3""#,
        "counter `1st Total` has no symbol, and its name gives no Rust constant (`1ST_TOTAL` starts with a \
         digit): give it a symbol",
    );
}
