//! The countersets of manifests/pmupcw.man, as build.rs generates them (crates/counter-manifest):
//! data structs, PCW descriptor tables, counter ids and names, and each counterset's typed binding
//! (`Counterset`). Editing the manifest changes these, and the string resources linked into the
//! driver, with no other edit.

/// The items the generated code names as `crate::pcw::...` (which re-exports them): counter-manifest's
/// contract, written by build.rs. Among them is the unsafe `CounterBlock` trait, declared here beside
/// the only types that implement it, so that the PCW logic (`crate::pcw`) holds no unsafe code.
mod contract {
    include!(concat!(env!("OUT_DIR"), "/pcw_contract.rs"));
}
pub use contract::*;

/// The generated API is whole for every counterset (names, GUIDs, both block types, ids, binding),
/// whether or not the driver uses each piece: the dead-code lint is not asked about it. Nor is clippy:
/// the generated functions' length follows the manifest (one statement per counter), not a design.
#[allow(dead_code, clippy::all, clippy::too_many_lines)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/counters.rs"));
}
pub use generated::*;
