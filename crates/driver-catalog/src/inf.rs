//! The files an INF names for its package: the keys of its `[SourceDisksFiles]` sections (undecorated
//! and platform-decorated, e.g. `[SourceDisksFiles.amd64]`). inf2cat catalogs those files plus the INF.

/// File names listed in the INF's SourceDisksFiles sections, in order of appearance, without
/// duplicates (compared case-insensitively, as Windows file names are).
pub fn source_disks_files(inf_text: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let mut in_section = false;
    for line in inf_text.lines() {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            let name = name.trim().to_ascii_lowercase();
            in_section = name == "sourcedisksfiles" || name.starts_with("sourcedisksfiles.");
            continue;
        }
        if !in_section {
            continue;
        }
        let key = line.split('=').next().unwrap_or("").trim().trim_matches('"').trim();
        if !key.is_empty() && !files.iter().any(|f| f.eq_ignore_ascii_case(key)) {
            files.push(key.to_string());
        }
    }
    files
}

/// The value of `CatalogFile` (or a decorated `CatalogFile.NTamd64`) in `[Version]`, if any.
pub fn catalog_file(inf_text: &str) -> Option<String> {
    let mut in_version = false;
    for line in inf_text.lines() {
        let line = strip_comment(line).trim();
        if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            in_version = name.trim().eq_ignore_ascii_case("version");
            continue;
        }
        if !in_version {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim().to_ascii_lowercase();
        if key == "catalogfile" || key.starts_with("catalogfile.") {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// The line without its `;` comment (a `;` inside double quotes is text).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (index, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => return &line[..index],
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: &str = "; comment [SourceDisksFiles]\n[Version]\nSignature = \"$WINDOWS NT$\"\n\
        CatalogFile = pmupcw.cat ; the catalog\n\n[SourceDisksFiles]\npmupcw.sys = 1,,\n\
        pmupcw.man = 1,, ; manifest\n[SourceDisksFiles.amd64]\nPMUPCW.SYS = 1\nextra.dll=1\n\
        [Strings]\nx = \"a;b\"\n";

    #[test]
    fn lists_source_disks_files() {
        assert_eq!(source_disks_files(INF), ["pmupcw.sys", "pmupcw.man", "extra.dll"]);
    }

    #[test]
    fn finds_the_catalog_name() {
        assert_eq!(catalog_file(INF).as_deref(), Some("pmupcw.cat"));
        assert_eq!(catalog_file("[Version]\nSignature=x\n"), None);
    }

    #[test]
    fn quoted_semicolons_are_text() {
        assert_eq!(strip_comment("x = \"a;b\" ; c"), "x = \"a;b\" ");
    }
}
