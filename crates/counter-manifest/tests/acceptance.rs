//! Kernel-mode manifests that CTRPP compiles and that use what the counters schema makes optional:
//! `$(string.ID)` references into the manifest's string table, counters without `symbol` or `struct`,
//! a provider without `providerName`, a counterset without `instances`, a base counter placed before
//! the fraction that names it with `baseID`, and a `noDisplay` counter without strings.
//!
//! Each manifest here is checked through the generator's public output: the string table
//! ([`string_resources`], CTRPP's ids) and the generated Rust.

use counter_manifest::{Manifest, StringKind, generate_rust, parse, string_resources};

const FILE: &str = "waves.man";

/// A two-counterset driver in the style of the WDK's kernel counter sample, with every schema-optional
/// omission this generator accepts and its strings in the string table (German first, so that
/// choosing en-US over "the first culture" shows).
const WAVES: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">
  <instrumentation>
    <counters xmlns="http://schemas.microsoft.com/win/2005/12/counters" schemaVersion="1.1">
      <provider callback="custom" applicationIdentity="waves.sys" providerType="kernelMode"
          providerGuid="{2C6B7A10-5D4E-4F3A-9B8C-1D2E3F405162}">
        <counterSet guid="{2C6B7A11-5D4E-4F3A-9B8C-1D2E3F405162}" uri="Waves.Geometric"
            symbol="GeometricWave" name="$(string.Geometric.Name)"
            description="$(string.Geometric.Description)" instances="multipleAggregate">
          <structs>
            <struct name="GeometricWaveValues" type="GEOMETRIC_WAVE_VALUES"/>
          </structs>
          <counter id="1" uri="Waves.Geometric.Triangle" name="$(string.Triangle.Name)"
              description="$(string.Triangle.Description)" field="Triangle" aggregate="avg"
              type="perf_counter_rawcount" detailLevel="standard"/>
          <counter id="2" uri="Waves.Geometric.Square" name="Square Wave" description="A square wave."
              struct="GeometricWaveValues" field="Square" aggregate="avg" type="perf_counter_rawcount"
              detailLevel="standard"/>
          <counter id="3" uri="Waves.Geometric.DutyCycle" name="% Duty Cycle"
              description="Time the square wave is high, of its period." field="High"
              type="perf_raw_fraction" detailLevel="standard"/>
          <counter id="4" uri="Waves.Geometric.DutyCycleBase" name="% Duty Cycle Base"
              description="The square wave's period." field="Period" type="perf_raw_base"
              detailLevel="advanced">
            <counterAttributes>
              <counterAttribute name="noDisplay"/>
            </counterAttributes>
          </counter>
        </counterSet>
        <counterSet guid="{2C6B7A12-5D4E-4F3A-9B8C-1D2E3F405162}" uri="Waves.Trigonometric"
            symbol="TrigonometricWave" name="Trigonometric Waves"
            description="A sine, a cosine and a constant.">
          <structs>
            <struct name="TrigonometricWaveValues" type="TRIGONOMETRIC_WAVE_VALUES"/>
          </structs>
          <counter id="1" uri="Waves.Trigonometric.Sine" name="Sine Wave/sec" description="A sine wave."
              field="Sine" type="perf_counter_bulk_count" detailLevel="standard"/>
          <counter id="2" uri="Waves.Trigonometric.Cosine" symbol="Cosine" name="Cosine Wave"
              description="A cosine wave." field="Cosine" type="perf_counter_rawcount"
              detailLevel="standard"/>
        </counterSet>
      </provider>
    </counters>
  </instrumentation>
  <localization>
    <resources culture="de-DE">
      <stringTable>
        <string id="Geometric.Name" value="Geometrische Wellen"/>
        <string id="Geometric.Description" value="Eine Dreieck- und eine Rechteckwelle."/>
        <string id="Triangle.Name" value="Dreieckwelle"/>
        <string id="Triangle.Description" value="Eine Dreieckwelle."/>
      </stringTable>
    </resources>
    <resources culture="en-US">
      <stringTable>
        <string id="Geometric.Name" value="Geometric Waves"/>
        <string id="Geometric.Description" value="A triangle and a square wave."/>
        <string id="Triangle.Name" value="Triangle Wave"/>
        <string id="Triangle.Description" value="A triangle wave."/>
      </stringTable>
    </resources>
  </localization>
</instrumentationManifest>
"#;

fn accepted(text: &str) -> Manifest {
    parse(FILE, text).unwrap_or_else(|error| panic!("refused: {error}"))
}

/// The string table as (id, text), names and descriptions only (the locked copies repeat the names).
fn table(manifest: &Manifest) -> Vec<(u32, String)> {
    string_resources(manifest)
        .into_iter()
        .filter(|s| s.kind != StringKind::LockedName)
        .map(|s| (s.id, s.text))
        .collect()
}

#[test]
fn the_string_table_holds_the_resolved_texts_at_ctrpps_ids() {
    let manifest = accepted(WAVES);
    let expected: Vec<(u32, String)> = [
        (1, "Geometric Waves"),
        (3, "A triangle and a square wave."),
        (5, "Triangle Wave"),
        (7, "A triangle wave."),
        (9, "Square Wave"),
        (11, "A square wave."),
        (13, "% Duty Cycle"),
        (15, "Time the square wave is high, of its period."),
        (17, "% Duty Cycle Base"),
        (19, "The square wave's period."),
        (21, "Trigonometric Waves"),
        (23, "A sine, a cosine and a constant."),
        (25, "Sine Wave/sec"),
        (27, "A sine wave."),
        (29, "Cosine Wave"),
        (31, "A cosine wave."),
    ]
    .into_iter()
    .map(|(id, text)| (id, text.to_owned()))
    .collect();
    assert_eq!(table(&manifest), expected);
    // The locked copy of a resolved name is the resolved name too.
    let locked = string_resources(&manifest).into_iter().find(|s| s.id == 2).unwrap();
    assert_eq!((locked.kind, locked.text.as_str()), (StringKind::LockedName, "Geometric Waves"));
}

#[test]
fn the_generated_rust_uses_the_resolved_names() {
    let rust = generate_rust(&accepted(WAVES), FILE);
    assert!(rust.contains("pub const NAME: &str = \"Geometric Waves\";"), "{rust}");
    assert!(!rust.contains("$(string."), "{rust}");
}

#[test]
fn counters_without_a_symbol_get_constants_named_after_them() {
    let rust = generate_rust(&accepted(WAVES), FILE);
    // The rule: the words of the (resolved) name, `%` read as PERCENT and `/` as PER.
    for constant in [
        "pub const TRIANGLE_WAVE: u16 = 1;",
        "pub const SQUARE_WAVE: u16 = 2;",
        "pub const PERCENT_DUTY_CYCLE: u16 = 3;",
        "pub const PERCENT_DUTY_CYCLE_BASE: u16 = 4;",
        "pub const SINE_WAVE_PER_SEC: u16 = 1;",
        // A symbol still names the constant.
        "pub const COSINE: u16 = 2;",
    ] {
        assert!(rust.contains(constant), "no `{constant}` in\n{rust}");
    }
}

#[test]
fn a_counter_without_struct_reads_the_countersets_one_struct() {
    let manifest = accepted(WAVES);
    let set = &manifest.counter_sets[0];
    assert_eq!(set.struct_name, "GeometricWaveValues");
    // Triangle (no struct) and Square (struct given) are fields of the same block.
    let names: Vec<&str> = set.layout.fields.iter().map(|f| f.manifest_name.as_str()).collect();
    assert_eq!(names, ["Triangle", "Square", "High", "Period"]);
}

#[test]
fn a_provider_without_provider_name_is_called_counters() {
    // The schema's default for providerName.
    assert_eq!(accepted(WAVES).provider.name, "Counters");
}

#[test]
fn a_counterset_without_instances_is_single_instance() {
    // The schema's default for instances.
    let manifest = accepted(WAVES);
    assert!(!manifest.counter_sets[1].instances.is_multiple());
}

#[test]
fn without_en_us_the_first_culture_is_used() {
    let text = WAVES.replace(r#"culture="en-US""#, r#"culture="fr-FR""#);
    let manifest = accepted(&text);
    assert_eq!(manifest.counter_sets[0].name, "Geometrische Wellen");
    assert_eq!(table(&manifest)[2], (5, "Dreieckwelle".to_owned()));
}

#[test]
fn the_default_culture_is_matched_ignoring_case() {
    let text = WAVES.replace(r#"culture="en-US""#, r#"culture="en-us""#);
    assert_eq!(accepted(&text).counter_sets[0].name, "Geometric Waves");
}

/// A base counter placed right before the fraction that names it with baseID, as the Windows SDK's
/// user-mode counters sample (ucs.man) places its perf_raw_base.
const BASE_FIRST: &str = r#"<counter id="3" uri="Waves.Geometric.DutyCycleBase" name="% Duty Cycle Base"
              description="The square wave's period." field="Period" type="perf_raw_base"
              detailLevel="advanced">
            <counterAttributes>
              <counterAttribute name="noDisplay"/>
            </counterAttributes>
          </counter>
          <counter id="4" uri="Waves.Geometric.DutyCycle" name="% Duty Cycle" baseID="3"
              description="Time the square wave is high, of its period." field="High"
              type="perf_raw_fraction" detailLevel="standard"/>"#;

fn with_base_first() -> String {
    let start = WAVES.find(r#"<counter id="3""#).unwrap();
    let end = WAVES[start..].find("</counter>").unwrap() + start + "</counter>".len();
    format!("{}{BASE_FIRST}{}", &WAVES[..start], &WAVES[end..])
}

#[test]
fn a_base_right_before_the_fraction_that_names_it_is_accepted() {
    let manifest = accepted(&with_base_first());
    let ids: Vec<u32> = manifest.counter_sets[0].counters.iter().map(|c| c.id).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    // The string table follows document order as ever: the base is at position 3.
    assert_eq!(table(&manifest)[6], (13, "% Duty Cycle Base".to_owned()));
}

/// The Geometric Waves counterSet's base counter without name and description: allowed by the schema
/// for a noDisplay counter.
fn nameless_base(text: &str) -> String {
    text.replacen(
        r#"name="% Duty Cycle Base"
              description="The square wave's period." field="Period""#,
        r#"field="Period""#,
        1,
    )
}

#[test]
fn a_nameless_nodisplay_counter_with_only_explicit_ids_after_it_gets_no_strings() {
    // Whether such a counter takes a string-id position cannot be told from CTRPP's documented output
    // (see the crate's README). It does not matter when every string after it has an explicit id:
    // schemaVersion 2.0's nameID/descriptionID on the second counterSet and its counters.
    let text = nameless_base(WAVES)
        .replace(
            r#"name="Trigonometric Waves""#,
            r#"name="Trigonometric Waves" nameID="100" descriptionID="102""#,
        )
        .replace(r#"name="Sine Wave/sec""#, r#"name="Sine Wave/sec" nameID="104" descriptionID="106""#)
        .replace(r#"name="Cosine Wave""#, r#"name="Cosine Wave" nameID="108" descriptionID="110""#);
    let manifest = accepted(&text);
    let strings = table(&manifest);
    assert_eq!(strings.len(), 7 * 2);
    assert!(!strings.iter().any(|(id, _)| (17..=19).contains(id)), "{strings:?}");
    let rust = generate_rust(&manifest, FILE);
    // Its constant comes from its field.
    assert!(rust.contains("pub const PERIOD: u16 = 4;"), "{rust}");
}

#[test]
fn a_nameless_nodisplay_counter_at_the_end_gets_no_strings() {
    // The last element of the provider: nothing after it depends on its position.
    let text = WAVES.replace(
        r#"detailLevel="standard"/>
        </counterSet>
      </provider>"#,
        r#"detailLevel="standard"/>
          <counter id="3" uri="Waves.Trigonometric.Time" field="Time" type="perf_counter_large_rawcount"
              detailLevel="advanced">
            <counterAttributes>
              <counterAttribute name="noDisplay"/>
            </counterAttributes>
          </counter>
        </counterSet>
      </provider>"#,
    );
    let manifest = accepted(&text);
    assert_eq!(table(&manifest).last(), Some(&(31, "A cosine wave.".to_owned())));
    assert!(generate_rust(&manifest, FILE).contains("pub const TIME: u16 = 3;"));
}
