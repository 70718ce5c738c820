//! A plain-text table of what the generator made of a manifest: for each counterset its Rust module and
//! block size, and for each counter its id, Rust constant, type, field, place in the block and string
//! resource ids. For reading, not parsing.

use std::fmt::Write as _;

use crate::model::{CounterSet, Manifest};
use crate::names::snake_case;
use crate::resources::{AssignedIds, ElementIds, manifest_string_ids};

const HEADER: [&str; 9] =
    ["id", "constant", "type", "field", "offset", "size", "name id", "desc. id", "name"];

/// The summary table of `manifest`, one block per counterset:
///
/// ```text
/// counterSet GeometricWave "Geometric Waves": module geometric_wave, multipleAggregate, block 16 bytes, strings 1 and 3
///   id  constant       type                   field     offset  size  name id  desc. id  name
///    1  TRIANGLE_WAVE  perf_counter_rawcount  Triangle       0     4        5         7  Triangle Wave
/// ```
///
/// A counter without strings shows `-` for its ids and name.
pub fn summary(manifest: &Manifest) -> String {
    let provider = &manifest.provider;
    let mut out = format!(
        "provider {} {}: strings in {}, resourceBase {}\n",
        provider.name, provider.guid, provider.application_identity, provider.resource_base
    );
    for (set, ids) in manifest.counter_sets.iter().zip(manifest_string_ids(manifest)) {
        out.push('\n');
        counter_set(&mut out, set, &ids);
    }
    out
}

fn counter_set(out: &mut String, set: &CounterSet, ids: &AssignedIds) {
    let _ = writeln!(
        out,
        "counterSet {} {:?}: module {}, {}, block {} bytes, strings {} and {}",
        set.symbol,
        set.name,
        snake_case(&set.symbol),
        set.instances.name(),
        set.layout.size,
        ids.set.name,
        ids.set.description
    );
    let mut rows: Vec<[String; 9]> = vec![HEADER.map(str::to_owned)];
    for (counter, ids) in set.counters.iter().zip(&ids.counters) {
        let field = set.layout.field(&counter.field).expect("every counter's field is laid out");
        let (name_id, description_id) = match counter.name {
            Some(_) => string_ids(ids),
            None => ("-".to_owned(), "-".to_owned()),
        };
        rows.push([
            counter.id.to_string(),
            counter.constant.clone(),
            counter.ty.name.to_owned(),
            counter.field.clone(),
            field.offset.to_string(),
            field.size.to_string(),
            name_id,
            description_id,
            counter.name.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    let widths: Vec<usize> =
        (0..HEADER.len()).map(|c| rows.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    // Numbers right-aligned, text left-aligned; the last column unpadded.
    let numeric = [true, false, false, false, true, true, true, true, false];
    for row in &rows {
        let mut line = String::from(" ");
        for (c, cell) in row.iter().enumerate() {
            line.push(' ');
            match (numeric[c], c + 1 == row.len()) {
                (true, _) => line.push_str(&format!("{cell:>width$}", width = widths[c])),
                (false, true) => line.push_str(cell),
                (false, false) => line.push_str(&format!("{cell:<width$}", width = widths[c])),
            }
            line.push(' ');
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

fn string_ids(ids: &ElementIds) -> (String, String) {
    (ids.name.to_string(), ids.description.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">
  <instrumentation>
    <counters xmlns="http://schemas.microsoft.com/win/2005/12/counters" schemaVersion="1.1">
      <provider applicationIdentity="t.sys" providerType="kernelMode"
          providerGuid="{5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13}">
        <counterSet guid="{8C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E}" uri="t.Set" symbol="Set" name="Set"
            description="A set." instances="multiple">
          <structs><struct name="Values"/></structs>
          <counter id="0" uri="t.Set.Part" name="% Part" description="Part." field="Part"
              type="perf_raw_fraction" detailLevel="standard"/>
          <counter id="1" uri="t.Set.Whole" field="Whole" type="perf_raw_base" detailLevel="advanced">
            <counterAttributes><counterAttribute name="noDisplay"/></counterAttributes>
          </counter>
        </counterSet>
      </provider>
    </counters>
  </instrumentation>
</instrumentationManifest>"#;

    #[test]
    fn the_table_lines_up() {
        let manifest = crate::parse("t.man", MANIFEST).unwrap();
        assert_eq!(
            summary(&manifest),
            "provider Counters {5E3B7A4C-1F2D-4C8B-9A61-7D0E2B4F8C13}: strings in t.sys, resourceBase 0\n\
             \n\
             counterSet Set \"Set\": module set, multiple, block 8 bytes, strings 1 and 3\n  \
             id  constant      type               field  offset  size  name id  desc. id  name\n   \
             0  PERCENT_PART  perf_raw_fraction  Part        0     4        5         7  % Part\n   \
             1  WHOLE         perf_raw_base      Whole       4     4        -         -  -\n"
        );
    }
}
