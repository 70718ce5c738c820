#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod model;
mod names;
mod parse;
mod rc_tool;
mod resources;
mod rust;
mod summary;
mod types;

use std::fmt;

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

/// A manifest error at a position: displays as `file:line:column: reason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// The manifest as the caller named it.
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// What is wrong, and where useful what would be right.
    pub reason: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.reason)
    }
}

impl std::error::Error for ManifestError {}

/// Why [`compile`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The manifest is malformed or breaks a rule.
    Manifest(ManifestError),
    /// The package version cannot be written as VERSIONINFO's four 16-bit numbers.
    Version(String),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Manifest(error) => error.fmt(f),
            CompileError::Version(reason) => write!(f, "cannot write the VERSIONINFO resource: {reason}"),
        }
    }
}

impl std::error::Error for CompileError {}

impl From<ManifestError> for CompileError {
    fn from(error: ManifestError) -> Self {
        CompileError::Manifest(error)
    }
}

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
