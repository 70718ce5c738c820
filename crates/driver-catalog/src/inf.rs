//! A driver package's INF, read by the syntax rules that inf2cat and the deployment checks rely on
//! ("General Syntax Rules for INF Files", learn.microsoft.com/windows-hardware/drivers/install/
//! general-syntax-rules-for-inf-files): `[section]` headers whose names compare case-insensitively,
//! `key = value` entries and bare lines, `;` comments outside double quotes, comma-separated value
//! lists. `%strings%` are not expanded.
//!
//! The catalog needs two things from it: the files its `[SourceDisksFiles]` sections name
//! (undecorated and platform-decorated, e.g. `[SourceDisksFiles.amd64]`), which inf2cat catalogs
//! with the INF, and the `CatalogFile` name.

use std::fmt;

/// One line of a section: `key = value`, or a bare value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number in the INF.
    pub line: usize,
    /// The text left of the first `=` outside quotes, trimmed; None for a bare line.
    pub key: Option<String>,
    /// The rest of the line, trimmed, comment removed, quotes kept.
    pub value: String,
}

/// A `[name]` section and its entries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name between the brackets, trimmed, as written.
    pub name: String,
    pub entries: Vec<Entry>,
}

/// The sections of an INF, in order; a name may appear more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inf {
    pub sections: Vec<Section>,
}

/// A line the parser cannot place: an unterminated section header, or an entry before any section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfError {
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for InfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for InfError {}

impl Inf {
    pub fn parse(text: &str) -> Result<Inf, InfError> {
        let mut sections: Vec<Section> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            let error = |reason: String| InfError { line: index + 1, reason };
            if let Some(header) = line.strip_prefix('[') {
                let name = header
                    .strip_suffix(']')
                    .ok_or_else(|| error(format!("unterminated section header {line:?}")))?;
                sections.push(Section { name: name.trim().to_owned(), entries: Vec::new() });
                continue;
            }
            let section =
                sections.last_mut().ok_or_else(|| error(format!("{line:?} comes before any section")))?;
            let (key, value) = split_key(line);
            section.entries.push(Entry { line: index + 1, key, value });
        }
        Ok(Inf { sections })
    }

    /// Every section called `name` (ignoring case), in order.
    pub fn sections_named(&self, name: &str) -> Vec<&Section> {
        self.sections.iter().filter(|section| section.name.eq_ignore_ascii_case(name)).collect()
    }

    /// The first section called `name` (ignoring case).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections_named(name).into_iter().next()
    }

    /// File names listed in the SourceDisksFiles sections (undecorated or decorated), in order of
    /// appearance, unquoted, without duplicates (compared case-insensitively, as Windows file names
    /// are).
    pub fn source_disks_files(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for section in
            self.sections.iter().filter(|section| is_or_decorates(&section.name, "SourceDisksFiles"))
        {
            for entry in &section.entries {
                let key = entry.key.as_deref().unwrap_or(&entry.value).trim_matches('"').trim();
                if !key.is_empty() && !files.iter().any(|f| f.eq_ignore_ascii_case(key)) {
                    files.push(key.to_string());
                }
            }
        }
        files
    }

    /// The value of `CatalogFile` (or a decorated `CatalogFile.NTamd64`) in `[Version]`, unquoted.
    pub fn catalog_file(&self) -> Option<String> {
        let entry = self
            .sections_named("Version")
            .into_iter()
            .flat_map(|version| &version.entries)
            .find(|entry| entry.key.as_deref().is_some_and(|key| is_or_decorates(key, "CatalogFile")))?;
        Some(entry.value.trim_matches('"').to_string())
    }
}

impl Section {
    /// The values of every entry whose key is `key` (ignoring case), in order.
    pub fn values(&self, key: &str) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|entry| entry.key.as_deref().is_some_and(|k| k.eq_ignore_ascii_case(key)))
            .map(|entry| entry.value.as_str())
            .collect()
    }

    /// The value of the first entry whose key is `key` (ignoring case).
    pub fn value(&self, key: &str) -> Option<&str> {
        self.values(key).into_iter().next()
    }
}

/// `value` without one pair of enclosing double quotes.
pub fn unquote(value: &str) -> &str {
    value.strip_prefix('"').and_then(|inner| inner.strip_suffix('"')).unwrap_or(value)
}

/// The comma-separated fields of a value, trimmed (INF values are lists).
pub fn fields(value: &str) -> Vec<&str> {
    value.split(',').map(str::trim).collect()
}

/// `name` is `base` or a platform decoration of it (`base.amd64`), ignoring case.
fn is_or_decorates(name: &str, base: &str) -> bool {
    name.len() >= base.len()
        && name.is_char_boundary(base.len())
        && name[..base.len()].eq_ignore_ascii_case(base)
        && (name.len() == base.len() || name[base.len()..].starts_with('.'))
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

/// Splits at the first `=` outside double quotes; a line without one is a bare value.
fn split_key(line: &str) -> (Option<String>, String) {
    let mut quoted = false;
    for (index, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '=' if !quoted => {
                return (Some(line[..index].trim().to_owned()), line[index + 1..].trim().to_owned());
            }
            _ => {}
        }
    }
    (None, line.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: &str = "; comment [SourceDisksFiles]\n[Version]\nSignature = \"$WINDOWS NT$\"\n\
        CatalogFile = pmupcw.cat ; the catalog\n\n[SourceDisksFiles]\npmupcw.sys = 1,,\n\
        pmupcw.man = 1,, ; manifest\n[SourceDisksFiles.amd64]\nPMUPCW.SYS = 1\nextra.dll=1\n\
        [SourceDisksFilesExtra]\nnot-a-source.sys = 1\n[Strings]\nx = \"a;b\"\n";

    fn parsed() -> Inf {
        Inf::parse(INF).expect("the sample parses")
    }

    #[test]
    fn lists_source_disks_files() {
        assert_eq!(parsed().source_disks_files(), ["pmupcw.sys", "pmupcw.man", "extra.dll"]);
    }

    #[test]
    fn finds_the_catalog_name() {
        assert_eq!(parsed().catalog_file().as_deref(), Some("pmupcw.cat"));
        let decorated = Inf::parse("[version]\nCatalogFile.NTamd64 = \"x.cat\"\n").unwrap();
        assert_eq!(decorated.catalog_file().as_deref(), Some("x.cat"));
        assert_eq!(Inf::parse("[Version]\nSignature=x\n").unwrap().catalog_file(), None);
    }

    #[test]
    fn quoted_semicolons_and_equals_signs_are_text() {
        assert_eq!(strip_comment("x = \"a;b\" ; c"), "x = \"a;b\" ");
        assert_eq!(split_key("\"a=b\" = c"), (Some("\"a=b\"".to_owned()), "c".to_owned()));
        assert_eq!(parsed().section("strings").unwrap().value("X"), Some("\"a;b\""));
    }

    #[test]
    fn keeps_line_numbers_bare_lines_and_repeated_sections() {
        let inf = Inf::parse("[A]\nk = 1\n\nbare, list\n[a]\nk=2\n").unwrap();
        assert_eq!(inf.sections_named("A").len(), 2);
        let first = inf.section("a").unwrap();
        assert_eq!(first.entries[1], Entry { line: 4, key: None, value: "bare, list".to_owned() });
        assert_eq!(fields(&first.entries[1].value), ["bare", "list"]);
        assert_eq!(first.values("K"), ["1"]);
        assert_eq!(unquote("\"$WINDOWS NT$\""), "$WINDOWS NT$");
    }

    #[test]
    fn reports_lines_it_cannot_place() {
        let header = Inf::parse("[Version]\n[Strings\n").unwrap_err();
        assert_eq!(header.to_string(), "line 2: unterminated section header \"[Strings\"");
        let orphan = Inf::parse("; c\nkey = 1\n[Version]\n").unwrap_err();
        assert_eq!(orphan.to_string(), "line 2: \"key = 1\" comes before any section");
    }
}
