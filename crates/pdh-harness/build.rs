//! Generates the counter catalogue (src/catalogue.rs includes it) from `manifests/pmupcw.man`, the
//! single source of truth: every counterset, whether it has instances, and its displayable counters
//! (base counters are read by PDH with their fraction and cannot be added on their own), with the raw
//! 64-bit totals (`perf_counter_large_rawcount`) marked monotonic.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let manifest_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/pmupcw.man");
    println!("cargo:rerun-if-changed={}", manifest_path.display());
    let text = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|error| panic!("{}: {error}", manifest_path.display()));
    let manifest = counter_manifest::parse(&manifest_path.to_string_lossy(), &text)
        .unwrap_or_else(|error| panic!("{error}"));
    let mut out = String::from("/// Every counterset of the manifest, in document order.\n");
    writeln!(out, "pub const COUNTER_SETS: [CounterSetSpec; {}] = [", manifest.counter_sets.len()).unwrap();
    for set in &manifest.counter_sets {
        writeln!(out, "    CounterSetSpec {{").unwrap();
        writeln!(out, "        name: {:?},", set.name).unwrap();
        // The driver's conventions: its aggregated sets have one instance per processor, except the
        // memory controllers' (one per controller), its other multi-instance set named instances (see
        // catalogue.rs).
        let kind = match set.instances {
            counter_manifest::Instances::Single => "Single",
            counter_manifest::Instances::MultipleAggregate if set.symbol == "MemoryController" => {
                "Controllers"
            }
            counter_manifest::Instances::MultipleAggregate => "PerProcessor",
            _ => "Named",
        };
        writeln!(out, "        instances: InstanceKind::{kind},").unwrap();
        writeln!(out, "        counters: &[").unwrap();
        // PDH shows neither base counters nor a noDisplay counter without a name.
        for counter in set.counters.iter().filter(|counter| !counter.ty.is_base) {
            let Some(name) = &counter.name else { continue };
            let monotonic = counter.ty.name == "perf_counter_large_rawcount";
            writeln!(out, "            CounterSpec {{ name: {name:?}, monotonic: {monotonic} }},").unwrap();
        }
        writeln!(out, "        ],\n    }},").unwrap();
    }
    writeln!(out, "];").unwrap();
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("catalogue.rs"), out).expect("write the catalogue");
}
