//! The profile axis of the matrix: what each cell writes into the service's Parameters key, and what
//! the driver must make of it (src/pmu/profile.rs and docs/internals.md, "Event profiles").

use kernel_double::control::registry::{self, PARAMETERS_KEY, REG_DWORD, REG_MULTI_SZ, REG_SZ};
use kernel_double::cpu::pmu;

/// A registry value: type and data.
type Value = (u32, Vec<u8>);

/// One setting of the Parameters key.
pub struct Case {
    pub name: String,
    profile: Option<Value>,
    custom_events: Option<Value>,
    /// Active Profile the status counterset must show: 0 default, 1 topdown, 2 custom.
    pub active_profile: u64,
    /// Rejected Custom Events it must show.
    pub rejected: u64,
    /// The workload event (index into `pmu::RATES`) each custom line counts in the virtual PMU, by
    /// line: line n is Custom Event n (`None`: an event the workload does not make, or a rejected
    /// line, which [`Case::rejected_lines`] names).
    pub custom: Vec<Option<usize>>,
    /// Which lines are rejected: they take no counter, and their Custom Event reads 0.
    pub rejected_lines: Vec<bool>,
    /// Which lines name `core=performance` (on a hybrid model, every model-specific line:
    /// src/pmu/profile.rs refuses one that names no core type there).
    pub performance_only: Vec<bool>,
}

impl Case {
    /// Writes the case into the Parameters key (deleting what it does not set).
    pub fn apply(&self) {
        for (name, value) in [("Profile", &self.profile), ("CustomEvents", &self.custom_events)] {
            match value {
                Some((kind, data)) => registry::set_value(PARAMETERS_KEY, name, *kind, data.clone()),
                None => registry::delete_value(PARAMETERS_KEY, name),
            }
        }
    }
}

/// Custom lines that each count a different workload event, none of which the custom profile counts
/// otherwise (instructions and both cycle counts): Intel's four architectural events left to
/// general-purpose counters and the four top-down inputs of its 4-wide cores (one per counter of an
/// 8-counter core), then a ninth for the line too many.
const INTEL_LINES: [(&str, Option<usize>); 9] = [
    ("event=0x2E,umask=0x4F,name=llc references", Some(3)),
    ("event=0x2E,umask=0x41,name=llc misses", Some(4)),
    ("event=0xC4,umask=0x00,name=branches", Some(5)),
    ("event=0xC5,name=branch mispredicts", Some(6)),
    ("event=0x9C,umask=0x01,name=idq not delivered", Some(pmu::SLOTS_NOT_DELIVERED)),
    ("event=0x0E,umask=0x01,name=uops issued", Some(pmu::SLOTS_ISSUED)),
    ("event=0xC2,umask=0x02,name=retire slots", Some(pmu::SLOTS_RETIRED)),
    ("event=0x0D,umask=0x01,name=recovery cycles", Some(pmu::RECOVERY_CYCLES)),
    ("event=0xA3,umask=0x14,cmask=20,name=ninth", None),
];

/// The same for AMD: the default profile's L2 and branch events, the Zen 4 top-down inputs, then
/// events the workload does not make (no AMD core leaves more than six counters to custom events).
const AMD_LINES: [(&str, Option<usize>); 9] = [
    ("event=0x60,umask=0xFF,name=l2 requests", Some(3)),
    ("event=0x64,umask=0x09,name=l2 misses", Some(4)),
    ("event=0xC2,name=branches", Some(5)),
    ("event=0xC3,name=branch mispredicts", Some(6)),
    ("event=0x1A0,umask=0x01,name=no ops from frontend", Some(pmu::SLOTS_NOT_DELIVERED)),
    ("event=0xAA,umask=0x07,name=ops dispatched", Some(pmu::SLOTS_ISSUED)),
    ("event=0xC1,name=ops retired", Some(pmu::SLOTS_RETIRED)),
    ("event=0x40,name=dc accesses", None),
    ("event=0x41,name=ninth", None),
];

/// The custom profile's limit on lines (src/pmu/profile.rs `CUSTOM_EVENTS`).
const CUSTOM_EVENTS: usize = 8;

fn sz(text: &str) -> Option<Value> {
    Some((REG_SZ, registry::sz(text)))
}

fn multi_sz(lines: &[&str]) -> Option<Value> {
    Some((REG_MULTI_SZ, registry::multi_sz(lines)))
}

/// Intel's lines from the fifth on are model-specific (the 4-wide cores' events and a ninth).
const FIRST_MODEL_SPECIFIC: usize = 4;

/// Every profile cell, for an Intel (`intel`) or AMD processor, hybrid or not: default, topdown,
/// custom with 0 to 9 lines (the ninth rejected), and malformed values. On a hybrid model the
/// model-specific lines name `core=performance`.
pub fn all(intel: bool, hybrid: bool) -> Vec<Case> {
    let named: Vec<(String, Option<usize>)> = (if intel { &INTEL_LINES } else { &AMD_LINES })
        .iter()
        .enumerate()
        .map(|(index, &(line, event))| match hybrid && intel && index >= FIRST_MODEL_SPECIFIC {
            true => (format!("{line},core=performance"), event),
            false => (line.to_string(), event),
        })
        .collect();
    let lines: [(&str, Option<usize>); 9] =
        std::array::from_fn(|index| (named[index].0.as_str(), named[index].1));
    let lines = &lines;
    let performance_only = |count: usize| {
        (0..count).map(|index| hybrid && intel && index >= FIRST_MODEL_SPECIFIC).collect::<Vec<_>>()
    };
    let mut cases = vec![
        Case {
            name: "default".into(),
            profile: sz("default"),
            custom_events: None,
            active_profile: 0,
            rejected: 0,
            custom: vec![],
            rejected_lines: vec![],
            performance_only: vec![],
        },
        Case {
            name: "topdown".into(),
            profile: sz("topdown"),
            custom_events: None,
            active_profile: 1,
            rejected: 0,
            custom: vec![],
            rejected_lines: vec![],
            performance_only: vec![],
        },
    ];
    for count in 0..=lines.len() {
        let text: Vec<&str> = lines[..count].iter().map(|(line, _)| *line).collect();
        cases.push(Case {
            name: format!("custom with {count} events"),
            profile: sz("custom"),
            custom_events: (count > 0).then(|| multi_sz(&text)).flatten(),
            active_profile: 2,
            rejected: count.saturating_sub(CUSTOM_EVENTS) as u64,
            custom: lines[..count.min(CUSTOM_EVENTS)].iter().map(|(_, event)| *event).collect(),
            rejected_lines: vec![false; count.min(CUSTOM_EVENTS)],
            performance_only: performance_only(count.min(CUSTOM_EVENTS)),
        });
    }
    cases.extend(malformed(lines));
    cases
}

/// Values the driver must reject, keeping what is valid.
fn malformed(lines: &[(&str, Option<usize>); 9]) -> Vec<Case> {
    let long = format!("event=0xC0,name={}", "x".repeat(2048));
    let mixed = [
        lines[0].0,
        "event=0x1000",    // wider than 12 bits, on either vendor
        "event=0xC4,en=1", // a bit the driver owns
        "umask=1",         // no event
        lines[1].0,
        "event=0xC4,cmask=300",  // out of range
        "event=0xC4,event=0xC5", // a key twice
        lines[2].0,
    ];
    let case =
        |name: &str, profile, custom_events, active_profile, rejected, custom: Vec<Option<usize>>| Case {
            name: name.into(),
            profile,
            custom_events,
            active_profile,
            rejected,
            performance_only: vec![false; custom.len()],
            rejected_lines: vec![false; custom.len()],
            custom,
        };
    vec![
        case("Profile as REG_DWORD", Some((REG_DWORD, 2u32.to_le_bytes().to_vec())), None, 0, 1, vec![]),
        case("unknown Profile", sz("fastest"), None, 0, 1, vec![]),
        case("overlong CustomEvents", sz("custom"), multi_sz(&[&long]), 2, 1, vec![]),
        case("CustomEvents as REG_SZ", sz("custom"), sz(lines[0].0), 2, 1, vec![]),
        Case {
            // Line n is Custom Event n: the valid lines 0, 4 and 7 keep their numbers.
            rejected_lines: vec![false, true, true, true, false, true, true, false],
            ..case(
                "CustomEvents with malformed lines",
                sz("custom"),
                multi_sz(&mixed),
                2,
                5,
                vec![lines[0].1, None, None, None, lines[1].1, None, None, lines[2].1],
            )
        },
    ]
}
