//! The string resources (counterset and counter names and descriptions) and the `.rc` script that
//! holds them with the driver's VERSIONINFO.

use std::fmt::Write as _;

use crate::model::Manifest;

/// Which string of a counterset or counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringKind {
    /// The name, for translators to localize.
    Name,
    /// The same name again, marked `// {Locked} means don't localize`: the language-neutral copy.
    LockedName,
    /// The description (the explain text perfmon shows).
    Description,
}

/// One string of the string table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringResource {
    /// The string resource id.
    pub id: u32,
    /// The text (resolved if the manifest used a `$(string.ID)` reference).
    pub text: String,
    /// Index of the counterset in the manifest.
    pub set: usize,
    /// Index of the counter in its counterset, or `None` for the counterset's own string.
    pub counter: Option<usize>,
    /// Which string of the element this is.
    pub kind: StringKind,
}

impl StringResource {
    /// "name of counter `X` of counterSet `Y`", for messages.
    pub fn what(&self, manifest: &Manifest) -> String {
        let set = &manifest.counter_sets[self.set];
        let kind = match self.kind {
            StringKind::Name => "name",
            StringKind::LockedName => "locked copy of the name",
            StringKind::Description => "description",
        };
        match self.counter {
            None => format!("{kind} of counterSet `{}`", set.symbol),
            Some(c) => {
                format!("{kind} of counter `{}` of counterSet `{}`", set.counters[c].label(), set.symbol)
            }
        }
    }
}

/// The string resource ids of one `<counterSet>` or `<counter>` element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementIds {
    /// The name's id.
    pub name: u32,
    /// The locked copy of the name's id.
    pub locked_name: u32,
    /// The description's id.
    pub description: u32,
}

/// CTRPP's string resource ids for the element at `position`: the 0-based index of the element among
/// all `<counterSet>` and `<counter>` elements of the provider in document order (a counterSet, its
/// counters, the next counterSet, ...), not the counter `id`.
///
/// ```text
/// name        = resourceBase + 4 * position + 1
/// locked name = resourceBase + 4 * position + 2   (the name again, "{Locked} means don't localize")
/// description = resourceBase + 4 * position + 3   (resourceBase + 4 * position itself is never used)
/// ```
///
/// Sources (real CTRPP output committed next to its manifest, all without `resourceBase`, i.e. base 0):
/// STEllAR-GROUP/hpx examples/heartbeat/heartbeat.man → hpx_counters.rc (modern ctrpp: 1, 2, 3 / 5, 6,
/// 7 / 9, 10, 11); nodejs/node/src/res/node_perfctr_provider.man → tools/msvs/genfiles/
/// node_perfctr_provider.rc (1 counterset and 10 counters, up to 41, 42, 43); the Vista SDK's
/// PerflibV2SampleProvider (two countersets: the second lands on 13, 14, 15 after two counters, so the
/// numbering is by position, not by counter id); dotnet/corefx's PerformanceCounter test provider.res.
/// The schema documents `resourceBase` as "the starting resource index value that CTRPP uses to generate
/// the resource identifiers" (learn.microsoft.com/windows/win32/perfctrs/performance-counters-provider-
/// complex-type).
///
/// UNVERIFIED: none of those outputs sets `resourceBase`, so whether a non-zero base adds to the
/// start index (`resourceBase + 4k + 1`, implemented here: base 0 then gives exactly the observed ids) or
/// is the first id itself (`resourceBase + 4k`) is an inference. lodctr recomputes these ids from the
/// manifest, so if it is wrong the counters show without names; check once on Windows with the real
/// ctrpp.exe (compare its .rc with ours) or after `lodctr /m` in Performance Monitor. Dropping
/// `resourceBase` from the manifest (base 0) would use only verified numbering.
///
/// A `noDisplay` counter without name and description has no strings but keeps its position here.
/// Whether CTRPP counts it too is not settled, so the parser accepts such a counter only where its
/// position moves no other string (nothing after it takes a positional id).
///
/// `nameID`/`descriptionID` (schemaVersion 2.0 attributes) replace the positional name and description
/// ids; the locked copy then goes to `nameID + 1`, as the schema's 2.0 example leaves room for (its
/// nameIDs step by 2), which is also an inference.
pub fn element_string_ids(
    resource_base: u32,
    position: u32,
    name_id: Option<u32>,
    description_id: Option<u32>,
) -> ElementIds {
    let slot = resource_base.saturating_add(position.saturating_mul(4));
    let name = name_id.unwrap_or(slot.saturating_add(1));
    ElementIds {
        name,
        locked_name: name.saturating_add(1),
        description: description_id.unwrap_or(slot.saturating_add(3)),
    }
}

/// The `nameID`/`descriptionID` attributes of one counterset and of its counters, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetIds {
    /// The counterset's `nameID`.
    pub name_id: Option<u32>,
    /// The counterset's `descriptionID`.
    pub description_id: Option<u32>,
    /// (nameID, descriptionID) of each counter, in manifest order.
    pub counters: Vec<(Option<u32>, Option<u32>)>,
}

/// The ids of one counterset's strings and of its counters' strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignedIds {
    /// The counterset's own strings.
    pub set: ElementIds,
    /// Each counter's strings, in manifest order (ids a counter without strings would have, too).
    pub counters: Vec<ElementIds>,
}

/// [`element_string_ids`] for every element of the provider, positions counted in document order.
pub fn assign_string_ids(resource_base: u32, sets: &[SetIds]) -> Vec<AssignedIds> {
    let mut position = 0u32;
    let mut next = |name_id, description_id| {
        let ids = element_string_ids(resource_base, position, name_id, description_id);
        position = position.saturating_add(1);
        ids
    };
    sets.iter()
        .map(|set| AssignedIds {
            set: next(set.name_id, set.description_id),
            counters: set.counters.iter().map(|&(name, description)| next(name, description)).collect(),
        })
        .collect()
}

/// The string resource ids of every counterset of `manifest` and of its counters, in manifest order.
pub fn manifest_string_ids(manifest: &Manifest) -> Vec<AssignedIds> {
    let ids: Vec<SetIds> = manifest
        .counter_sets
        .iter()
        .map(|set| SetIds {
            name_id: set.name_id,
            description_id: set.description_id,
            counters: set.counters.iter().map(|c| (c.name_id, c.description_id)).collect(),
        })
        .collect();
    assign_string_ids(manifest.provider.resource_base, &ids)
}

/// Every string of the manifest with its resource id, in string-table order (ascending id, as CTRPP
/// writes them).
pub fn string_resources(manifest: &Manifest) -> Vec<StringResource> {
    let assigned = manifest_string_ids(manifest);
    let mut strings = Vec::new();
    for (s, (set, ids)) in manifest.counter_sets.iter().zip(&assigned).enumerate() {
        let mut push = |ids: &ElementIds, name: &str, description: &str, counter| {
            for (id, text, kind) in [
                (ids.name, name, StringKind::Name),
                (ids.locked_name, name, StringKind::LockedName),
                (ids.description, description, StringKind::Description),
            ] {
                strings.push(StringResource { id, text: text.to_owned(), set: s, counter, kind });
            }
        };
        push(&ids.set, &set.name, &set.description, None);
        for (c, (counter, ids)) in set.counters.iter().zip(&ids.counters).enumerate() {
            // A noDisplay counter without name and description has no strings.
            if let (Some(name), Some(description)) = (&counter.name, &counter.description) {
                push(ids, name, description, Some(c));
            }
        }
    }
    // A stable sort keeps manifest order among equal ids (which validation refuses anyway).
    strings.sort_by_key(|s| s.id);
    strings
}

/// A package version as VERSIONINFO's four 16-bit numbers: `0.1.0` → `[0, 1, 0, 0]`. Pre-release and
/// build metadata (`-rc.1`, `+abc`) are dropped.
pub fn version_numbers(version: &str) -> Result<[u16; 4], String> {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return Err(format!("version `{version}` does not have 1 to 4 numbers"));
    }
    let mut numbers = [0u16; 4];
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        *slot = part
            .parse()
            .map_err(|_| format!("version `{version}`: `{part}` is not a number from 0 to 65535"))?;
    }
    Ok(numbers)
}

/// Quotes `text` as an .rc string literal: `"` doubled, `\` escaped, line breaks and tabs as `\n` and
/// `\t`. Everything else (non-ASCII included) is written as is: the script is UTF-8 and says so with
/// `#pragma code_page(65001)`.
pub fn rc_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\"\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// VERSIONINFO values (winver.h), written as numbers because llvm-rc has no SDK headers.
const VOS_NT_WINDOWS32: u32 = 0x0004_0004;
const VFT_DRV: u32 = 0x3;
const VFT2_DRV_SYSTEM: u32 = 0x7;
const VS_FFI_FILEFLAGSMASK: u32 = 0x3F;

/// What the `.rc` script's VERSIONINFO resource says about the driver binary. Its InternalName and
/// OriginalFilename are the file name of the provider's `applicationIdentity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// FILEVERSION and PRODUCTVERSION: 1 to 4 dot-separated numbers up to 65535, with pre-release and
    /// build metadata ignored (`0.1.0` and `0.1.0-rc.1` are 0,1,0,0), e.g. `CARGO_PKG_VERSION`.
    pub version: String,
    /// CompanyName.
    pub company: String,
    /// FileDescription.
    pub description: String,
    /// ProductName.
    pub product: String,
    /// LegalCopyright.
    pub copyright: String,
}

/// The `.rc` script: the string table of `manifest` and, if `version_info` is given, the driver's
/// VERSIONINFO. `source` names the manifest in the header comment. Fails only if the version cannot be
/// written as VERSIONINFO's four numbers.
pub fn generate_rc(
    manifest: &Manifest,
    source: &str,
    version_info: Option<&VersionInfo>,
) -> Result<String, String> {
    let mut rc = String::new();
    let w = &mut rc;
    // Writing to a String cannot fail.
    let _ = writeln!(w, "// @generated by build.rs from {source} (crates/counter-manifest). Do not edit.");
    let _ = writeln!(w, "//");
    let _ = writeln!(
        w,
        "// The counter names and descriptions of provider {} ({}),",
        manifest.provider.name, manifest.provider.guid
    );
    let and_version = if version_info.is_some() { ", and its version resource" } else { "" };
    let _ =
        writeln!(w, "// which lodctr reads from {}{and_version}.", manifest.provider.application_identity);
    let _ = writeln!(w, "#pragma code_page(65001)");
    let _ = writeln!(w);
    let _ = writeln!(w, "LANGUAGE 0x09, 0x01 // LANG_ENGLISH, SUBLANG_ENGLISH_US");
    let _ = writeln!(w);
    string_table(w, manifest);
    if let Some(info) = version_info {
        version_resource(w, info, file_name(&manifest.provider.application_identity))?;
    }
    Ok(rc)
}

/// The STRINGTABLE block, in CTRPP's line format with locked copies marked as it marks them. A
/// manifest without strings has none: an empty block is not worth writing.
fn string_table(w: &mut String, manifest: &Manifest) {
    let strings = string_resources(manifest);
    if strings.is_empty() {
        return;
    }
    let _ = writeln!(w, "STRINGTABLE");
    let _ = writeln!(w, "BEGIN");
    for string in strings {
        let locked =
            if string.kind == StringKind::LockedName { " // {Locked} means don't localize" } else { "" };
        let _ = writeln!(w, "    {} {}{locked}", string.id, rc_string(&string.text));
    }
    let _ = writeln!(w, "END");
    let _ = writeln!(w);
}

/// The last component of a Windows or POSIX path: `%SystemRoot%\system32\drivers\x.sys` is `x.sys`.
fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

/// The VERSIONINFO block of a driver file `file_name`.
fn version_resource(w: &mut String, info: &VersionInfo, file_name: &str) -> Result<(), String> {
    let numbers = version_numbers(&info.version)?;
    let commas = numbers.map(|n| n.to_string()).join(",");
    let dotted = numbers.map(|n| n.to_string()).join(".");
    let _ = writeln!(w, "1 VERSIONINFO");
    let _ = writeln!(w, "FILEVERSION {commas}");
    let _ = writeln!(w, "PRODUCTVERSION {commas}");
    let _ = writeln!(w, "FILEFLAGSMASK {VS_FFI_FILEFLAGSMASK:#x}");
    let _ = writeln!(w, "FILEFLAGS 0x0");
    let _ = writeln!(w, "FILEOS {VOS_NT_WINDOWS32:#x} // VOS_NT_WINDOWS32");
    let _ = writeln!(w, "FILETYPE {VFT_DRV:#x} // VFT_DRV");
    let _ = writeln!(w, "FILESUBTYPE {VFT2_DRV_SYSTEM:#x} // VFT2_DRV_SYSTEM");
    let _ = writeln!(w, "BEGIN");
    let _ = writeln!(w, "    BLOCK \"StringFileInfo\"");
    let _ = writeln!(w, "    BEGIN");
    let _ = writeln!(w, "        BLOCK \"040904B0\" // U.S. English, Unicode");
    let _ = writeln!(w, "        BEGIN");
    let values = [
        ("CompanyName", info.company.as_str()),
        ("FileDescription", &info.description),
        ("FileVersion", &dotted),
        ("InternalName", file_name),
        ("LegalCopyright", &info.copyright),
        ("OriginalFilename", file_name),
        ("ProductName", &info.product),
        ("ProductVersion", &dotted),
    ];
    for (key, value) in values {
        let _ = writeln!(w, "            VALUE {}, {}", rc_string(key), rc_string(value));
    }
    let _ = writeln!(w, "        END");
    let _ = writeln!(w, "    END");
    let _ = writeln!(w, "    BLOCK \"VarFileInfo\"");
    let _ = writeln!(w, "    BEGIN");
    let _ = writeln!(w, "        VALUE \"Translation\", 0x409, 1200");
    let _ = writeln!(w, "    END");
    let _ = writeln!(w, "END");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(version_numbers("0.1.0"), Ok([0, 1, 0, 0]));
        assert_eq!(version_numbers("1.2.3-rc.1+build"), Ok([1, 2, 3, 0]));
        assert_eq!(version_numbers("1.2.3.4"), Ok([1, 2, 3, 4]));
        assert!(version_numbers("1.2.3.4.5").is_err());
        assert!(version_numbers("1.70000.0").is_err());
        assert!(version_numbers("").is_err());
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name("pmupcw.sys"), "pmupcw.sys");
        assert_eq!(file_name(r"%SystemRoot%\system32\drivers\pacer.sys"), "pacer.sys");
        assert_eq!(file_name("drivers/x.sys"), "x.sys");
    }

    #[test]
    fn rc_strings() {
        assert_eq!(rc_string("plain"), "\"plain\"");
        assert_eq!(rc_string("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(rc_string(r"C:\x"), r#""C:\\x""#);
        assert_eq!(rc_string("a\nb\tc"), r#""a\nb\tc""#);
        assert_eq!(rc_string("Grüße €"), "\"Grüße €\"");
    }
}
