//! What every agent may ask for: the countersets and counters of `manifests/pmupcw.man`, parsed with
//! the project's own manifest compiler.

use counter_manifest::{CounterSet, Manifest};

/// The manifest.
pub fn load() -> Manifest {
    let text = crate::read("manifests/pmupcw.man");
    counter_manifest::parse("manifests/pmupcw.man", &text).expect("the manifest compiles")
}

/// The counterset named `name` (PDH matches names without regard to case).
pub fn set<'a>(manifest: &'a Manifest, name: &str) -> Option<&'a CounterSet> {
    manifest.counter_sets.iter().find(|set| set.name.eq_ignore_ascii_case(name))
}

/// What is wrong with asking `object` for `counter`: a counterset or counter the manifest lacks, or a
/// base counter (`noDisplay`: PDH lists no such counter, so no agent can add it).
pub fn check_counter(manifest: &Manifest, object: &str, counter: &str) -> Option<String> {
    let Some(set) = set(manifest, object) else {
        return Some(format!("counterset {object:?} is not in the manifest"));
    };
    match set
        .counters
        .iter()
        .find(|known| known.name.as_deref().is_some_and(|name| name.eq_ignore_ascii_case(counter)))
    {
        None => Some(format!("{object:?} has no counter {counter:?}")),
        Some(known) if known.no_display => {
            Some(format!("{object:?} {counter:?} is a base counter (noDisplay)"))
        }
        Some(_) => None,
    }
}

/// Whether `object`'s `counter` is a fraction whose displayed value PDH computes from a base
/// (instructions per 100 cycles, the percentages, the average collect time): its raw value alone is a
/// numerator, not the value.
pub fn needs_base(manifest: &Manifest, object: &str, counter: &str) -> bool {
    set(manifest, object)
        .and_then(|set| set.counters.iter().find(|known| known.name.as_deref() == Some(counter)))
        .is_some_and(|known| known.ty.base.is_some())
}

/// The instance names a machine with `processors` processors in groups of 64 and no hybrid cores
/// shows for `object`, `_Total` included where perflib aggregates one (`multipleAggregate`), or
/// `[""]` for a single-instance counterset; for `Memory Controller`, one package's two controllers
/// and `_Total`.
pub fn instances(manifest: &Manifest, object: &str, processors: u32) -> Vec<String> {
    let set = set(manifest, object).expect("a counterset of the manifest");
    if !set.instances.is_multiple() {
        return vec![String::new()];
    }
    if set.name == "Hardware Counters by Core Type" {
        return vec!["All".to_string()];
    }
    if set.name == "Memory Controller" {
        // One instance per memory controller, package,controller (two on every 64-bit client part,
        // docs/memory-controller.md), and the machine's _Total whichever way it is made.
        return ["0,0", "0,1", "_Total"].map(String::from).to_vec();
    }
    let mut names: Vec<String> =
        (0..processors).map(|index| format!("{},{}", index / 64, index % 64)).collect();
    if set.instances.name() == "multipleAggregate" {
        names.push("_Total".to_string());
    }
    names
}
