//! Readers for an image's resources: its string table (RT_STRING), from which perfmon loads the
//! names and help texts of the driver's counters, and its version information (RT_VERSION).
//!
//! goblin reads the structures: resource directories and their entries, data entries, the nodes of
//! a version resource and its VS_FIXEDFILEINFO. What it lacks is written here: walking every name
//! and language of a resource type (goblin follows only the first entry of each level), decoding
//! string-table blocks, and walking the version resource as the tree it is (goblin reads its nodes
//! as a flat list, so it cannot tell which string table a string belongs to, and keeps only twelve
//! well-known keys).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use goblin::pe::PE;
use goblin::pe::options::ParseOptions;
use goblin::pe::resource::{
    ImageResourceDirectory, RT_STRING, RT_VERSION, ResourceDataEntry, ResourceEntry, ResourceString,
    VS_FFI_SIGNATURE, VS_VERSION_INFO_KEY, VsFixedFileInfo,
};
use goblin::pe::section_table::SectionTable;
use goblin::pe::utils::find_offset;
use scroll::{LE, Pread};

/// LANG_ENGLISH, SUBLANG_ENGLISH_US: the language preferred when several define the same resource.
pub const LANG_ENGLISH_US: u16 = 0x409;
/// The number of strings in one string-table block.
pub const STRINGS_PER_BLOCK: u32 = 16;
/// The key of the version resource's node that holds its string tables.
pub const STRING_FILE_INFO_KEY: &str = "StringFileInfo";

/// The version information of an image, as its RT_VERSION resource (VS_VERSIONINFO) holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// FILEVERSION: major, minor, build, revision.
    pub file_version: [u16; 4],
    /// PRODUCTVERSION: major, minor, build, revision.
    pub product_version: [u16; 4],
    /// FILEOS, e.g. VOS_NT_WINDOWS32 (0x40004).
    pub file_os: u32,
    /// FILETYPE, e.g. VFT_DRV (3).
    pub file_type: u32,
    /// FILESUBTYPE, e.g. VFT2_DRV_SYSTEM (7).
    pub file_subtype: u32,
    /// The keys and values of the first string table of StringFileInfo (e.g. the one named
    /// "040904B0"); empty if there is none.
    pub strings: BTreeMap<String, String>,
}

/// Why an image's resources cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// The image, its resource directory or one of its resources is malformed: what and where.
    Malformed(String),
    /// The image has no RT_VERSION resource.
    NoVersionInfo,
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceError::Malformed(error) => write!(f, "malformed resources: {error}"),
            ResourceError::NoVersionInfo => write!(f, "the image has no version resource (RT_VERSION)"),
        }
    }
}

impl std::error::Error for ResourceError {}

/// `what` cannot be read because of `error`.
fn malformed(what: impl fmt::Display, error: impl fmt::Display) -> ResourceError {
    ResourceError::Malformed(format!("{what}: {error}"))
}

/// Every string of the image's string tables (RT_STRING), by string id. Where several languages
/// define the same id, [`LANG_ENGLISH_US`] wins, otherwise the language listed first. An image
/// without resources, or without string tables, has an empty table.
pub fn string_table(bytes: &[u8]) -> Result<BTreeMap<u32, String>, ResourceError> {
    let Some(resources) = Resources::parse(bytes)? else {
        return Ok(BTreeMap::new());
    };
    let mut strings: BTreeMap<u32, (u16, String)> = BTreeMap::new();
    for resource in resources.of_type(RT_STRING)? {
        for (id, string) in string_block(resource.name, resource.data)? {
            if replaces(strings.get(&id).map(|(language, _)| *language), resource.language) {
                strings.insert(id, (resource.language, string));
            }
        }
    }
    Ok(strings.into_iter().map(|(id, (_, string))| (id, string)).collect())
}

/// Whether a string in `language` replaces one already read in `existing`: only English replaces,
/// and only another language.
fn replaces(existing: Option<u16>, language: u16) -> bool {
    existing.is_none_or(|existing| existing != LANG_ENGLISH_US && language == LANG_ENGLISH_US)
}

/// The image's version information: the RT_VERSION resource in [`LANG_ENGLISH_US`], otherwise the
/// first one.
pub fn version_info(bytes: &[u8]) -> Result<VersionInfo, ResourceError> {
    let resources = Resources::parse(bytes)?.ok_or(ResourceError::NoVersionInfo)?;
    let versions = resources.of_type(RT_VERSION)?;
    let version = versions
        .iter()
        .find(|resource| resource.language == LANG_ENGLISH_US)
        .or(versions.first())
        .ok_or(ResourceError::NoVersionInfo)?;
    parse_version_info(version.data)
}

/// One resource: its name (an id), its language and its bytes.
struct Resource<'a> {
    name: u16,
    language: u16,
    data: &'a [u8],
}

/// The resource directory of an image, and what maps the RVAs of its resources to file offsets.
struct Resources<'a> {
    bytes: &'a [u8],
    /// The bytes of the resource directory, to which the offsets of its entries are relative.
    directory: &'a [u8],
    sections: Vec<SectionTable>,
    file_alignment: u32,
    options: ParseOptions,
}

impl<'a> Resources<'a> {
    /// The image's resource directory, or `None` if it has none.
    fn parse(bytes: &'a [u8]) -> Result<Option<Self>, ResourceError> {
        let mut options = ParseOptions::default();
        // goblin's own reading of the resources stops at the first version resource and manifest;
        // the readers here walk the directory themselves, reporting what is malformed where.
        options.parse_resources = false;
        options.parse_attribute_certificates = false;
        let pe = PE::parse_with_opts(bytes, &options).map_err(|error| malformed("the image", error))?;
        let Some(optional) = pe.header.optional_header else {
            return Err(ResourceError::Malformed("no optional header: an object file, not an image".into()));
        };
        let Some(&table) = optional.data_directories.get_resource_table() else {
            return Ok(None);
        };
        let (rva, size) = (table.virtual_address, table.size);
        if size == 0 {
            return Ok(None);
        }
        let file_alignment = optional.windows_fields.file_alignment;
        let mut resources =
            Resources { bytes, directory: &[], sections: pe.sections, file_alignment, options };
        resources.directory = resources.file_bytes(rva, size, "the resource directory")?;
        Ok(Some(resources))
    }

    /// Every resource of type `type_id` whose name is an id, in the order of the directory (names,
    /// then languages, ascending).
    fn of_type(&self, type_id: u16) -> Result<Vec<Resource<'a>>, ResourceError> {
        let types = self.entries(0, "the resource directory")?;
        let Some(type_entry) = types.iter().find(|entry| entry.id() == Some(type_id)) else {
            return Ok(Vec::new());
        };
        let what = format!("the directory of resource type {type_id}");
        let mut resources = Vec::new();
        for name_entry in self.entries(subdirectory(type_entry, &what)?, &what)? {
            let Some(name) = name_entry.id() else {
                return Err(ResourceError::Malformed(format!("{what} holds a resource named by a string")));
            };
            let what = format!("resource {type_id}/{name}");
            for language_entry in self.entries(subdirectory(&name_entry, &what)?, &what)? {
                let Some(language) = language_entry.id() else {
                    return Err(ResourceError::Malformed(format!("{what} has a language named by a string")));
                };
                let what = format!("resource {type_id}/{name}/{language:#x}");
                let data = self.resource_data(&language_entry, &what)?;
                resources.push(Resource { name, language, data });
            }
        }
        Ok(resources)
    }

    /// The entries of the resource directory at `offset` in [`Resources::directory`].
    fn entries(&self, offset: u32, what: &str) -> Result<Vec<ResourceEntry>, ResourceError> {
        let mut offset = offset as usize;
        let header: ImageResourceDirectory =
            self.directory.gread_with(&mut offset, LE).map_err(|error| malformed(what, error))?;
        let entries = header.next_iter(offset, self.directory).map_err(|error| malformed(what, error))?;
        entries.collect::<Result<_, _>>().map_err(|error| malformed(what, error))
    }

    /// The bytes of the resource that the language-level `entry` describes.
    fn resource_data(&self, entry: &ResourceEntry, what: &str) -> Result<&'a [u8], ResourceError> {
        let Some(offset) = entry.offset_to_data() else {
            return Err(ResourceError::Malformed(format!("{what} is a directory, not data")));
        };
        let data_entry: ResourceDataEntry =
            self.directory.pread_with(offset as usize, LE).map_err(|error| malformed(what, error))?;
        self.file_bytes(data_entry.offset_to_data, data_entry.size, what)
    }

    /// The file bytes of `size` bytes at `rva`, which must lie in one section.
    fn file_bytes(&self, rva: u32, size: u32, what: &str) -> Result<&'a [u8], ResourceError> {
        let outside = || {
            ResourceError::Malformed(format!("{what} at rva {rva:#x} (size {size:#x}) lies outside the file"))
        };
        let start = find_offset(rva as usize, &self.sections, self.file_alignment, &self.options)
            .ok_or_else(outside)?;
        let end = start.checked_add(size as usize).ok_or_else(outside)?;
        self.bytes.get(start..end).ok_or_else(outside)
    }
}

/// The offset of the directory that `entry`, of a type or name level, points to.
fn subdirectory(entry: &ResourceEntry, what: &str) -> Result<u32, ResourceError> {
    if !entry.data_is_directory() {
        return Err(ResourceError::Malformed(format!("{what} is data, not a directory")));
    }
    Ok(entry.offset_to_directory())
}

/// The present strings of string-table block `block`: 16 strings, with ids from (`block` - 1) * 16,
/// each a u16 count of UTF-16 code units followed by those units; a count of 0 is an absent string.
fn string_block(block: u16, data: &[u8]) -> Result<Vec<(u32, String)>, ResourceError> {
    let what = format!("string-table block {block}");
    let Some(first) = u32::from(block).checked_sub(1).map(|block| block * STRINGS_PER_BLOCK) else {
        return Err(ResourceError::Malformed(format!("{what}: blocks are numbered from 1")));
    };
    let mut strings = Vec::new();
    let mut offset = 0;
    for id in first..first + STRINGS_PER_BLOCK {
        let units: u16 = data.gread_with(&mut offset, LE).map_err(|_| truncated(&what, id))?;
        let end = offset + 2 * usize::from(units);
        let string = data.get(offset..end).ok_or_else(|| truncated(&what, id))?;
        offset = end;
        if units > 0 {
            let string = utf16_le(string).map_err(|error| malformed(format!("string {id}"), error))?;
            strings.push((id, string));
        }
    }
    Ok(strings)
}

fn truncated(block: &str, id: u32) -> ResourceError {
    ResourceError::Malformed(format!("{block} ends within string {id}"))
}

/// UTF-16LE bytes (of even length) as a string.
fn utf16_le(bytes: &[u8]) -> Result<String, std::string::FromUtf16Error> {
    let units: Vec<u16> = bytes.chunks_exact(2).map(|unit| u16::from_le_bytes([unit[0], unit[1]])).collect();
    String::from_utf16(&units)
}

/// A VS_VERSIONINFO: its VS_FIXEDFILEINFO, then the strings of its first string table.
fn parse_version_info(data: &[u8]) -> Result<VersionInfo, ResourceError> {
    let (root, children) = version_node(data, 0, "VS_VERSIONINFO")?;
    if root.key_string().as_deref() != Some(VS_VERSION_INFO_KEY) {
        return Err(ResourceError::Malformed(format!(
            "the version resource's key is {:?}, not {VS_VERSION_INFO_KEY:?}",
            root.key_string()
        )));
    }
    let fixed: VsFixedFileInfo =
        root.value.pread_with(0, LE).map_err(|error| malformed("VS_FIXEDFILEINFO", error))?;
    if !fixed.is_valid() {
        return Err(ResourceError::Malformed(format!(
            "VS_FIXEDFILEINFO's signature is {:#x}, not {:#x}",
            fixed.signature, VS_FFI_SIGNATURE
        )));
    }
    Ok(VersionInfo {
        // Not goblin's VsFixedFileInfo::file_version(), which (in 0.10.7) reads the file date.
        file_version: version_field(fixed.file_version_ms, fixed.file_version_ls),
        product_version: version_field(fixed.product_version_ms, fixed.product_version_ls),
        file_os: fixed.file_os,
        file_type: fixed.file_type,
        file_subtype: fixed.file_subtype,
        strings: first_string_table(data, children)?,
    })
}

/// A version number stored as two u32s: major and minor in `ms`, build and revision in `ls`.
fn version_field(ms: u32, ls: u32) -> [u16; 4] {
    [(ms >> 16) as u16, ms as u16, (ls >> 16) as u16, ls as u16]
}

/// The keys and values of the first string table of the first StringFileInfo among `children`
/// (the children of VS_VERSIONINFO); none if there is no such table.
fn first_string_table(
    data: &[u8],
    children: Range<usize>,
) -> Result<BTreeMap<String, String>, ResourceError> {
    let children = version_children(data, children, "VS_VERSIONINFO")?;
    let is_string_file_info =
        |node: &ResourceString| node.key_string().as_deref() == Some(STRING_FILE_INFO_KEY);
    let Some((_, tables)) = children.into_iter().find(|(node, _)| is_string_file_info(node)) else {
        return Ok(BTreeMap::new());
    };
    let Some((table, strings)) = version_children(data, tables, STRING_FILE_INFO_KEY)?.into_iter().next()
    else {
        return Ok(BTreeMap::new());
    };
    let what = format!("string table {:?}", table.key_string().unwrap_or_default());
    let strings = version_children(data, strings, &what)?;
    strings.iter().map(|(node, _)| key_value(node)).collect()
}

/// A String node of a string table: its key and text value.
fn key_value(node: &ResourceString) -> Result<(String, String), ResourceError> {
    let key = node
        .key_string()
        .ok_or_else(|| ResourceError::Malformed("a version string's key is not UTF-16".into()))?;
    let value = node
        .value_string()
        .ok_or_else(|| ResourceError::Malformed(format!("version string {key:?} is not UTF-16")))?;
    Ok((key, value))
}

/// The nodes in `range` of the version resource `data`: each begins on a 4-byte boundary.
fn version_children<'a>(
    data: &'a [u8],
    range: Range<usize>,
    parent: &str,
) -> Result<Vec<(ResourceString<'a>, Range<usize>)>, ResourceError> {
    let mut children = Vec::new();
    let mut start = range.start.next_multiple_of(4);
    while start < range.end {
        let (node, grandchildren) = version_node(&data[..range.end], start, parent)?;
        start = (start + usize::from(node.len)).next_multiple_of(4);
        children.push((node, grandchildren));
    }
    Ok(children)
}

/// The node of the version resource at `start` in `data` (wLength, wValueLength, wType, szKey,
/// Value, parsed by goblin) and the range of its children, which follow its value up to wLength.
fn version_node<'a>(
    data: &'a [u8],
    start: usize,
    parent: &str,
) -> Result<(ResourceString<'a>, Range<usize>), ResourceError> {
    let what = format!("a node of {parent} at offset {start:#x}");
    let length = data.pread_with::<u16>(start, LE).map_err(|error| malformed(&what, error))?;
    let end = start + usize::from(length);
    let Some(node_bytes) = data.get(..end) else {
        return Err(ResourceError::Malformed(format!(
            "{what} is {length} bytes long, past the end of {parent}"
        )));
    };
    let mut offset = start;
    let node = ResourceString::parse(node_bytes, &mut offset).map_err(|error| malformed(&what, error))?;
    let Some(node) = node else {
        return Err(ResourceError::Malformed(format!("{what} has length 0")));
    };
    Ok((node, offset..end))
}
