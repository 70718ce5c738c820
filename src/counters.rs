//! The countersets of manifests/pmupcw.man, as build.rs generates them (crates/counter-manifest):
//! data structs, PCW descriptor tables, counter ids and names. Editing the manifest changes these,
//! and the string resources linked into the driver, with no other edit.
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/counters.rs"));
