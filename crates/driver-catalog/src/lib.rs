//! `driver-catalog`: makes a driver package's catalog file (.cat) on a non-Windows host, the job the
//! WDK's inf2cat does in the Windows flow. The catalog lists every package file (the INF and the files
//! its `[SourceDisksFiles]` name) by hash; `pnputil /add-driver` installs a package only when a signed
//! catalog covers its files. The output is unsigned (a SignedData without signers); osslsigncode signs
//! it with the package's test certificate (see scripts/linux/package.sh).

pub mod catalog;
pub mod ctl;
pub mod inf;
pub mod pe;

use std::path::{Path, PathBuf};

pub use catalog::{
    CatalogOptions, CatalogVersion, Member, MemberKind, ParsedCatalog, build_unsigned_catalog, parse_catalog,
};

/// Reads and parses the INF at `path`; errors name the file and line (`path:line: reason`).
pub fn read_inf(path: &Path) -> Result<inf::Inf, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    inf::Inf::parse(&String::from_utf8_lossy(&text))
        .map_err(|e| format!("{}:{}: {}", path.display(), e.line, e.reason))
}

/// The files a package catalog covers: the INF itself, then each file its `[SourceDisksFiles]`
/// sections name, looked up beside the INF.
pub fn package_files(inf: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = inf.parent().unwrap_or(Path::new("."));
    let mut files = vec![inf.to_path_buf()];
    files.extend(read_inf(inf)?.source_disks_files().into_iter().map(|name| dir.join(name)));
    Ok(files)
}

/// Hashes each file into a catalog member named by its file name.
pub fn members_for(files: &[PathBuf]) -> Result<Vec<Member>, String> {
    let mut members: Vec<Member> = Vec::new();
    for path in files {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{}: no file name", path.display()))?;
        if members.iter().any(|m| m.file_name.eq_ignore_ascii_case(name)) {
            return Err(format!("{name} is listed twice"));
        }
        members.push(Member::from_contents(name, &data).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    Ok(members)
}
