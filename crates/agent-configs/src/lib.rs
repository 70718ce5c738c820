//! The fleet agents' configurations and the Grafana dashboard in `docs/agents/`, read with real parsers
//! and checked against the counter manifest and against each agent's own rules, written down here from
//! the agent's source (version and file named in each module): which instances reach the output
//! (`_Total` above all), which keys are required, and what a counter's metric or field is named.
//! The tests (`tests/`) run these rules over the committed files and show that each rule can fail.

pub mod alloy;
pub mod manifest;
pub mod otel;
pub mod promql;
pub mod promql_eval;
pub mod telegraf;
pub mod windows_exporter;

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of `path`, relative to the repository root.
pub fn read(path: &str) -> String {
    let file = repository().join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// The values of the driver's status enumeration `name` (`PmuState`, `TopdownSource`) as
/// `src/pcw/driver_status.rs` defines them (`Variant = n,`), which the status counters report.
pub fn driver_values(name: &str) -> std::collections::BTreeSet<u32> {
    enum_values("src/pcw/driver_status.rs", name)
}

/// The values of the memory controller source's status (`src/imc/status.rs` `Status`), which the
/// Hardware Counters Driver counter Memory Controller State reports.
pub fn memory_controller_values() -> std::collections::BTreeSet<u32> {
    enum_values("src/imc/status.rs", "Status")
}

/// The values of enumeration `name` as the Rust source `path` defines them (`Variant = n,`).
fn enum_values(path: &str, name: &str) -> std::collections::BTreeSet<u32> {
    let text = read(path);
    let start = text.find(&format!("pub enum {name} {{")).unwrap_or_else(|| panic!("enum {name}"));
    let body = &text[start..start + text[start..].find('}').expect("the enum's end")];
    let variant = regex::Regex::new(r"(?m)^\s*[A-Z][A-Za-z]* = (\d+),").expect("the pattern");
    let values: std::collections::BTreeSet<u32> =
        variant.captures_iter(body).map(|c| c[1].parse().expect("a number")).collect();
    assert!(!values.is_empty(), "no values in {name}");
    values
}

/// PDH's instance wildcard (`*` any run, `?` one character, case-insensitive), the way an agent's
/// `instances: ["*"]` reaches PDH: whether `pattern` names `instance`.
pub fn instance_matches(pattern: &str, instance: &str) -> bool {
    fn matches(pattern: &[char], name: &[char]) -> bool {
        match (pattern.first(), name.first()) {
            (None, None) => true,
            (Some('*'), _) => {
                matches(&pattern[1..], name) || (!name.is_empty() && matches(pattern, &name[1..]))
            }
            (Some('?'), Some(_)) => matches(&pattern[1..], &name[1..]),
            (Some(p), Some(n)) => p.eq_ignore_ascii_case(n) && matches(&pattern[1..], &name[1..]),
            _ => false,
        }
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = instance.chars().collect();
    matches(&pattern, &name)
}

#[cfg(test)]
mod tests {
    use super::instance_matches;

    #[test]
    fn the_wildcard_matches_as_pdh_does() {
        assert!(instance_matches("*", "_Total"));
        assert!(instance_matches("*", "0,1"));
        assert!(instance_matches("_total", "_Total"));
        assert!(instance_matches("0,?", "0,7"));
        assert!(!instance_matches("0,?", "1,0"));
        assert!(!instance_matches("_Total", "0,0"));
    }
}
