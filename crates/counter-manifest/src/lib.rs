#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod error;
mod model;
mod names;
mod parse;
mod rc_tool;
mod resources;
mod rust;
mod summary;
mod types;

pub use error::{CompileError, ManifestError};
pub use model::{Counter, CounterSet, DetailLevel, Field, Instances, Layout, Manifest, Provider};
pub use names::{counter_constant, screaming_snake_case, snake_case};
pub use parse::{COUNTERS_NAMESPACE, DEFAULT_CULTURE, MAX_COUNTER_ID, is_guid, parse};
pub use rc_tool::{LLVM_RC_NAMES, RcTool, compile_rc, find_llvm_rc};
pub use resources::{
    AssignedIds, ElementIds, SetIds, StringKind, StringResource, VersionInfo, assign_string_ids,
    element_string_ids, generate_rc, manifest_string_ids, rc_string, string_resources, version_numbers,
};
pub use rust::generate_rust;
pub use summary::summary;
pub use types::{COUNTER_TYPES, CounterType, UNSUPPORTED_SCHEMA_TYPES};

/// The items the generated Rust names as `crate::pcw::...` (`CounterDescriptor`, the `CounterBlock`
/// contract, the `Counterset` binding trait, `CountersetBlock`, `InstanceKind`), as Rust source: a
/// build script writes it next to the generated code, and the driver includes it as its `pcw` module
/// (or re-exports its items from there). The text is the crate's `contract/pcw.rs`.
pub const PCW_CONTRACT: &str = include_str!("../contract/pcw.rs");

/// Everything generated from one manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The validated manifest.
    pub manifest: Manifest,
    /// The Rust source a driver includes (e.g. as `OUT_DIR/counters.rs`): [`generate_rust`].
    pub rust: String,
    /// The resource script with the string table (and VERSIONINFO if asked): [`generate_rc`].
    pub rc: String,
}

/// Parses and validates the manifest `text`, then generates the Rust source and the resource script.
/// `file` is how errors and the generated headers name the manifest (e.g. `manifests/pmupcw.man`);
/// `version_info`, if given, becomes the script's VERSIONINFO resource.
pub fn compile(
    file: &str,
    text: &str,
    version_info: Option<&VersionInfo>,
) -> Result<Generated, CompileError> {
    let manifest = parse(file, text)?;
    let rust = generate_rust(&manifest, file);
    let rc = generate_rc(&manifest, file, version_info).map_err(CompileError::Version)?;
    Ok(Generated { manifest, rust, rc })
}
