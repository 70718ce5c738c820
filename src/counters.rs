//! The countersets of manifests/pmupcw.man, as build.rs generates them (crates/counter-manifest):
//! data structs, PCW descriptor tables, counter ids and names. Editing the manifest changes these,
//! and the string resources linked into the driver, with no other edit.

/// Counter data blocks: `#[repr(C)]` structs of plain integers, generated from the manifest, whose
/// bytes PCW copies according to the counter descriptors. Declared here, beside the only types that
/// implement it, so that the PCW logic (`crate::pcw`, which re-exports it) holds no unsafe code.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with only integer (or atomic integer) fields and no padding PCW
/// could read uninitialised; the generated structs satisfy this (build.rs lays them out without gaps).
pub unsafe trait CounterBlock: Sync + 'static {}

/// The generated API is whole for every counterset (names, GUIDs, both block types, ids), whether or
/// not the driver uses each piece: the dead-code lint is not asked about it. Nor is clippy: the
/// generated functions' length follows the manifest (one statement per counter), not a design.
#[allow(dead_code, clippy::all, clippy::too_many_lines)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/counters.rs"));
}
pub use generated::*;
