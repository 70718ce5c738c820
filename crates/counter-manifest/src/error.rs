//! The crate's errors: a manifest error at its position in the manifest (what every parse and rule
//! check returns), and why compiling a manifest into the driver's sources failed. Their own module,
//! below the parser and the generators that return them and the crate root that re-exports them.

use std::fmt;

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

/// Why [`compile`](crate::compile) failed.
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
