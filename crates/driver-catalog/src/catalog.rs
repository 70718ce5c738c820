//! Builds and reads a driver catalog: a PKCS #7 SignedData whose content is a Microsoft Certificate
//! Trust List (CTL, 1.3.6.1.4.1.311.10.1) with entries keyed by file hash.
//!
//! ```text
//! ContentInfo { signedData, [0] SignedData {
//!   version 1, digestAlgorithms {}, contentInfo { szOID_CTL, [0] CertificateTrustList }, signerInfos {} } }
//! CertificateTrustList ::= SEQUENCE {
//!   subjectUsage      SEQUENCE { szOID_CATALOG_LIST 1.3.6.1.4.1.311.12.1.1 },
//!   listIdentifier    OCTET STRING (16 bytes: a GUID in MakeCat, derived from the members here),
//!   thisUpdate        UTCTime,
//!   subjectAlgorithm  { szOID_CATALOG_LIST_MEMBER2 1.3.6.1.4.1.311.12.1.3 (version 2) or
//!                       szOID_CATALOG_LIST_MEMBER 1.3.6.1.4.1.311.12.1.2 (version 1), NULL },
//!   trustedSubjects   SEQUENCE OF SEQUENCE {        -- sorted by subjectIdentifier
//!     subjectIdentifier OCTET STRING,
//!     attributes        SET OF SEQUENCE { type OID, values SET OF ANY } },
//!   ctlExtensions [0] SEQUENCE OF Extension { CAT_NAMEVALUE, OCTET STRING CatNameValue }
//!                     -- catalog-level attributes: "OSAttr" = "2:10.0", "OS" = "_v100_X64" }
//! CatNameValue ::= SEQUENCE { BMPString name, INTEGER 0x10010001, OCTET STRING UTF-16LE value + NUL }
//! ```
//!
//! Version 2 (the default; SHA-256), laid out as MakeCat writes it for `CatalogVersion=2`,
//! `HashAlgorithms=SHA256`. Checked once, by hand, against such a MakeCat catalog (osslsigncode's test
//! file tests/files/unsigned.cat and the files it lists): the flat-file entries come out byte for byte
//! the same, and so do the PE image hashes (SHA-256 and SHA-1); MakeCat's PE entry differs only by the
//! page hashes it was asked for. Per file one entry with subjectIdentifier = the raw SHA-256 hash and
//!   CAT_MEMBERINFO2 1.3.6.1.4.1.311.12.2.3: an empty `[0]` for a PE file, `[2]` for a flat file (what
//!     MakeCat wrote for those kinds; `[1]` was its CAB file);
//!   CAT_NAMEVALUE 1.3.6.1.4.1.311.12.2.1: "File" = name, "OSAttr" = "2:10.0";
//!   SPC_INDIRECT_DATA 1.3.6.1.4.1.311.2.1.4: SpcIndirectDataContent {
//!     data { SPC_PE_IMAGE_DATA 1.3.6.1.4.1.311.2.1.15 (Authenticode image hash) or
//!            SPC_CAB_DATA 1.3.6.1.4.1.311.2.1.25 (flat hash of the whole file), link },
//!     messageDigest { { sha256, NULL }, hash } },
//! and one more entry keyed by the raw SHA-1 hash carrying only CAT_MEMBERINFO2, so that SHA-1
//! lookups find the file too.
//!
//! Version 1 (`CatalogVersion::V1`; SHA-1 only), as CryptCATPersistStore fills the CTL: one entry per
//! file with subjectIdentifier = the upper-case hex SHA-1 hash as UTF-16LE with a NUL, and the
//! attributes SPC_INDIRECT_DATA (sha1), CAT_MEMBERINFO 1.3.6.1.4.1.311.12.2.2 { BMPString SIP GUID,
//! INTEGER 512 } and the same name-values.

use std::fmt;

use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::der::{self, DerError, Tlv};
use crate::pe;

pub const OID_SIGNED_DATA: &str = "1.2.840.113549.1.7.2";
pub const OID_CTL: &str = "1.3.6.1.4.1.311.10.1";
pub const OID_CATALOG_LIST: &str = "1.3.6.1.4.1.311.12.1.1";
pub const OID_CATALOG_LIST_MEMBER: &str = "1.3.6.1.4.1.311.12.1.2";
pub const OID_CATALOG_LIST_MEMBER2: &str = "1.3.6.1.4.1.311.12.1.3";
pub const OID_CAT_NAMEVALUE: &str = "1.3.6.1.4.1.311.12.2.1";
pub const OID_CAT_MEMBERINFO: &str = "1.3.6.1.4.1.311.12.2.2";
pub const OID_CAT_MEMBERINFO2: &str = "1.3.6.1.4.1.311.12.2.3";
pub const OID_SPC_INDIRECT_DATA: &str = "1.3.6.1.4.1.311.2.1.4";
pub const OID_SPC_PE_IMAGE_DATA: &str = "1.3.6.1.4.1.311.2.1.15";
pub const OID_SPC_CAB_DATA: &str = "1.3.6.1.4.1.311.2.1.25";
pub const OID_SHA1: &str = "1.3.14.3.2.26";
pub const OID_SHA256: &str = "2.16.840.1.101.3.4.2.1";

/// Subject interface package GUIDs recorded in CAT_MEMBERINFO: the PE SIP and the flat-file SIP.
pub const SIP_GUID_PE: &str = "{C689AAB8-8E78-11D0-8C47-00C04FC295EE}";
pub const SIP_GUID_FLAT: &str = "{DE351A42-8E59-11D0-8C47-00C04FC295EE}";
/// CAT_MEMBERINFO.dwCertVersion as MakeCat writes it.
const MEMBER_CERT_VERSION: u64 = 0x200;
/// CRYPTCAT_ATTR_AUTHENTICATED | CRYPTCAT_ATTR_DATAASCII | CRYPTCAT_ATTR_NAMEASCII.
pub const NAMEVALUE_FLAGS: u64 = 0x1001_0001;

/// "<<<Obsolete>>>" as the SpcLink file name signtool and MakeCat write.
const OBSOLETE: &str = "<<<Obsolete>>>";

/// How a member's hash was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// Authenticode PE image hash (SPC_PE_IMAGE_DATA, the PE SIP).
    Pe,
    /// Hash of the whole file (SPC_CAB_DATA, the flat-file SIP).
    Flat,
}

impl MemberKind {
    /// The CAT_MEMBERINFO2 choice MakeCat writes for the member's SIP.
    fn member_info2_tag(self) -> u8 {
        match self {
            MemberKind::Pe => 0,
            MemberKind::Flat => 2,
        }
    }

    fn sip_guid(self) -> &'static str {
        match self {
            MemberKind::Pe => SIP_GUID_PE,
            MemberKind::Flat => SIP_GUID_FLAT,
        }
    }
}

/// One file to list in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The name recorded in the "File" attribute (no directory).
    pub file_name: String,
    pub kind: MemberKind,
    pub sha1: Vec<u8>,
    pub sha256: Vec<u8>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

impl Member {
    /// Hashes `data` the way Windows looks the file up in a catalog
    /// (CryptCATAdminCalcHashFromFileHandle2): the Authenticode image hash for a PE file, the plain
    /// file hash otherwise.
    pub fn from_contents(file_name: &str, data: &[u8]) -> Result<Member, pe::PeError> {
        let (kind, sha1, sha256) = if pe::is_pe(data) {
            (MemberKind::Pe, pe::authenticode_digest::<Sha1>(data)?, pe::authenticode_digest::<Sha256>(data)?)
        } else {
            (MemberKind::Flat, Sha1::digest(data).to_vec(), Sha256::digest(data).to_vec())
        };
        Ok(Member { file_name: file_name.to_string(), kind, sha1, sha256 })
    }

    /// The version 1 reference tag: the SHA-1 digest in upper-case hex.
    pub fn tag(&self) -> String {
        hex(&self.sha1)
    }
}

/// Catalog format: version 2 (SHA-256 with SHA-1 lookup entries) or version 1 (SHA-1 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CatalogVersion {
    V1,
    #[default]
    V2,
}

/// Catalog-wide settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogOptions {
    pub version: CatalogVersion,
    /// thisUpdate, seconds since the Unix epoch.
    pub this_update: u64,
    /// Catalog-level "OS" attribute (inf2cat's name for /os:10_X64 is "_v100_X64").
    pub os: String,
    /// "OSAttr" attribute on the catalog and on each member ("2:10.0": Windows 10 and later).
    pub os_attr: String,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            version: CatalogVersion::default(),
            this_update: 0,
            os: "_v100_X64".to_string(),
            os_attr: "2:10.0".to_string(),
        }
    }
}

fn name_value(name: &str, value: &str) -> Vec<u8> {
    der::sequence(&[
        der::bmp_string(name),
        der::integer(NAMEVALUE_FLAGS),
        der::octet_string(&der::utf16le_nul(value)),
    ])
}

fn attribute(oid: &str, value: Vec<u8>) -> Vec<u8> {
    der::sequence(&[der::oid(oid), der::set_of(&[value])])
}

/// SpcLink ::= file [2] EXPLICIT SpcString, SpcString ::= unicode [0] IMPLICIT BMPString.
fn file_link(name: &str) -> Vec<u8> {
    let bmp: Vec<u8> = name.encode_utf16().flat_map(u16::to_be_bytes).collect();
    der::context(2, &der::context_primitive(0, &bmp))
}

fn indirect_data(member: &Member, version: CatalogVersion) -> Vec<u8> {
    let data = match member.kind {
        // SpcPeImageData ::= SEQUENCE { flags BIT STRING (empty), file [0] EXPLICIT SpcLink }, with
        // the "<<<Obsolete>>>" name signtool writes (no page hashes).
        MemberKind::Pe => der::sequence(&[
            der::oid(OID_SPC_PE_IMAGE_DATA),
            der::sequence(&[der::tlv(der::BIT_STRING, &[0]), der::context(0, &file_link(OBSOLETE))]),
        ]),
        // The flat-file SIP's link is an empty file name (MakeCat's output).
        MemberKind::Flat => der::sequence(&[der::oid(OID_SPC_CAB_DATA), file_link("")]),
    };
    let (algorithm, digest) = match version {
        CatalogVersion::V1 => (OID_SHA1, &member.sha1),
        CatalogVersion::V2 => (OID_SHA256, &member.sha256),
    };
    let digest_info =
        der::sequence(&[der::sequence(&[der::oid(algorithm), der::null()]), der::octet_string(digest)]);
    der::sequence(&[data, digest_info])
}

/// The CTL entries of one member, each as (subjectIdentifier, encoded entry).
fn member_entries(member: &Member, options: &CatalogOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let names = [
        attribute(OID_CAT_NAMEVALUE, name_value("File", &member.file_name)),
        attribute(OID_CAT_NAMEVALUE, name_value("OSAttr", &options.os_attr)),
    ];
    let entry = |identifier: Vec<u8>, attributes: &[Vec<u8>]| {
        let encoded = der::sequence(&[der::octet_string(&identifier), der::set_of(attributes)]);
        (identifier, encoded)
    };
    match options.version {
        CatalogVersion::V1 => {
            let member_info =
                der::sequence(&[der::bmp_string(member.kind.sip_guid()), der::integer(MEMBER_CERT_VERSION)]);
            let mut attributes = vec![
                attribute(OID_SPC_INDIRECT_DATA, indirect_data(member, options.version)),
                attribute(OID_CAT_MEMBERINFO, member_info),
            ];
            attributes.extend(names);
            vec![entry(der::utf16le_nul(&member.tag()), &attributes)]
        }
        CatalogVersion::V2 => {
            let member_info =
                attribute(OID_CAT_MEMBERINFO2, der::context_primitive(member.kind.member_info2_tag(), &[]));
            let mut attributes = vec![
                attribute(OID_SPC_INDIRECT_DATA, indirect_data(member, options.version)),
                member_info.clone(),
            ];
            attributes.extend(names);
            vec![entry(member.sha256.clone(), &attributes), entry(member.sha1.clone(), &[member_info])]
        }
    }
}

/// The CertificateTrustList (DER) listing `members`.
pub fn build_ctl(members: &[Member], options: &CatalogOptions) -> Vec<u8> {
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
        members.iter().flat_map(|m| member_entries(m, options)).collect();
    entries.sort();
    let mut id_hash = Sha1::new();
    for member in members {
        id_hash.update(&member.sha256);
        id_hash.update(member.file_name.as_bytes());
    }
    let list_identifier = &id_hash.finalize()[..16];
    let entries: Vec<Vec<u8>> = entries.into_iter().map(|(_, encoded)| encoded).collect();
    let extension = |name: &str, value: &str| {
        der::sequence(&[der::oid(OID_CAT_NAMEVALUE), der::octet_string(&name_value(name, value))])
    };
    let extensions = der::sequence(&[extension("OSAttr", &options.os_attr), extension("OS", &options.os)]);
    let subject_algorithm = match options.version {
        CatalogVersion::V1 => OID_CATALOG_LIST_MEMBER,
        CatalogVersion::V2 => OID_CATALOG_LIST_MEMBER2,
    };
    der::sequence(&[
        der::sequence(&[der::oid(OID_CATALOG_LIST)]),
        der::octet_string(list_identifier),
        der::utc_time(options.this_update),
        der::sequence(&[der::oid(subject_algorithm), der::null()]),
        der::sequence(&entries),
        der::context(0, &extensions),
    ])
}

/// The unsigned catalog: a SignedData with no signers around the CTL, the form MakeCat writes before
/// signtool signs it and the form `osslsigncode sign` accepts as a CAT file.
pub fn build_unsigned_catalog(members: &[Member], options: &CatalogOptions) -> Vec<u8> {
    let ctl = build_ctl(members, options);
    let signed_data = der::sequence(&[
        der::integer(1),
        der::set_of(&[]),
        der::sequence(&[der::oid(OID_CTL), der::context(0, &ctl)]),
        der::set_of(&[]),
    ]);
    der::sequence(&[der::oid(OID_SIGNED_DATA), der::context(0, &signed_data)])
}

/// A member as read back from a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedMember {
    /// subjectIdentifier as stored.
    pub identifier: Vec<u8>,
    /// The identifier as a hash in upper-case hex (version 2: the raw bytes; version 1: the UTF-16
    /// tag text).
    pub tag: String,
    /// SpcIndirectDataContent.data type: SPC_PE_IMAGE_DATA or SPC_CAB_DATA.
    pub data_type: String,
    pub digest_algorithm: String,
    pub digest: Vec<u8>,
    /// CAT_MEMBERINFO subject GUID (version 1).
    pub subject_guid: Option<String>,
    /// CAT_MEMBERINFO2 choice tag number (version 2: 0 for PE, 2 for flat files).
    pub member_info2: Option<u8>,
    /// CAT_NAMEVALUE attributes, (name, value).
    pub attributes: Vec<(String, String)>,
}

impl ParsedMember {
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A catalog as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCatalog {
    pub subject_usage: Vec<String>,
    pub list_identifier: Vec<u8>,
    pub this_update: String,
    pub subject_algorithm: String,
    pub members: Vec<ParsedMember>,
    /// Catalog-level CAT_NAMEVALUE attributes.
    pub attributes: Vec<(String, String)>,
    /// Number of SignerInfos in the SignedData (0 for an unsigned catalog).
    pub signer_count: usize,
    /// Whether the SignedData carries certificates.
    pub has_certificates: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError(pub String);

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "catalog: {}", self.0)
    }
}

impl std::error::Error for CatalogError {}

impl From<DerError> for CatalogError {
    fn from(e: DerError) -> Self {
        CatalogError(e.to_string())
    }
}

fn bad<T>(message: impl Into<String>) -> Result<T, CatalogError> {
    Err(CatalogError(message.into()))
}

fn parse_name_value(tlv: Tlv<'_>) -> Result<(String, String), CatalogError> {
    let parts = tlv.expect(der::SEQUENCE)?.children()?;
    let [name, flags, value] = parts.as_slice() else { return bad("CAT_NAMEVALUE needs 3 fields") };
    flags.integer()?;
    let value = der::from_utf16le_nul(value.expect(der::OCTET_STRING)?.content)?;
    Ok((name.bmp_string()?, value))
}

/// Reads a catalog (signed or not) back into its parts.
pub fn parse_catalog(bytes: &[u8]) -> Result<ParsedCatalog, CatalogError> {
    let content_info = Tlv::read_all(bytes)?.expect(der::SEQUENCE)?.children()?;
    let [content_type, explicit] = content_info.as_slice() else { return bad("ContentInfo shape") };
    if content_type.oid()? != OID_SIGNED_DATA {
        return bad("not a SignedData");
    }
    let signed = Tlv::read_all(explicit.expect(0xa0)?.content)?.expect(der::SEQUENCE)?.children()?;
    if signed.len() < 4 {
        return bad("SignedData too short");
    }
    let inner = signed[2].expect(der::SEQUENCE)?.children()?;
    let [inner_type, inner_content] = inner.as_slice() else { return bad("inner ContentInfo shape") };
    if inner_type.oid()? != OID_CTL {
        return bad(format!("content type {} is not a CTL", inner_type.oid()?));
    }
    let has_certificates = signed[3..].iter().any(|t| t.tag == 0xa0);
    let signer_infos = signed.last().unwrap().expect(der::SET)?;
    let signer_count = signer_infos.children()?.len();

    let ctl = Tlv::read_all(inner_content.expect(0xa0)?.content)?.expect(der::SEQUENCE)?.children()?;
    let mut fields = ctl.into_iter().peekable();
    if fields.peek().is_some_and(|t| t.tag == der::INTEGER) {
        fields.next();
    }
    let mut next = |what: &str| fields.next().ok_or_else(|| CatalogError(format!("CTL lacks {what}")));
    let subject_usage =
        next("subjectUsage")?.children()?.iter().map(|t| t.oid()).collect::<Result<Vec<_>, _>>()?;
    let list_identifier = next("listIdentifier")?.expect(der::OCTET_STRING)?.content.to_vec();
    let this_update =
        String::from_utf8_lossy(next("thisUpdate")?.expect(der::UTC_TIME)?.content).into_owned();
    let subject_algorithm = next("subjectAlgorithm")?.children()?.first().map(|t| t.oid()).transpose()?;
    let subject_algorithm = subject_algorithm.ok_or_else(|| CatalogError("empty subjectAlgorithm".into()))?;
    let mut members = Vec::new();
    let mut attributes = Vec::new();
    for field in fields {
        match field.tag {
            der::SEQUENCE => {
                for entry in field.children()? {
                    members.push(parse_member(entry, subject_algorithm == OID_CATALOG_LIST_MEMBER)?);
                }
            }
            0xa0 => {
                let extensions = Tlv::read_all(field.content)?.expect(der::SEQUENCE)?.children()?;
                for extension in extensions {
                    let parts = extension.children()?;
                    if parts.first().map(|t| t.oid()).transpose()?.as_deref() == Some(OID_CAT_NAMEVALUE) {
                        let value = parts.last().unwrap().expect(der::OCTET_STRING)?;
                        attributes.push(parse_name_value(Tlv::read_all(value.content)?)?);
                    }
                }
            }
            other => return bad(format!("unexpected CTL field tag {other:#x}")),
        }
    }
    Ok(ParsedCatalog {
        subject_usage,
        list_identifier,
        this_update,
        subject_algorithm,
        members,
        attributes,
        signer_count,
        has_certificates,
    })
}

fn parse_member(entry: Tlv<'_>, text_tags: bool) -> Result<ParsedMember, CatalogError> {
    let parts = entry.expect(der::SEQUENCE)?.children()?;
    let Some(identifier) = parts.first() else { return bad("empty CTL entry") };
    let identifier = identifier.expect(der::OCTET_STRING)?.content.to_vec();
    let tag = if text_tags { der::from_utf16le_nul(&identifier)? } else { hex(&identifier) };
    let mut member = ParsedMember {
        identifier,
        tag,
        data_type: String::new(),
        digest_algorithm: String::new(),
        digest: Vec::new(),
        subject_guid: None,
        member_info2: None,
        attributes: Vec::new(),
    };
    let Some(attribute_set) = parts.get(1) else { return Ok(member) };
    for attribute in attribute_set.expect(der::SET)?.children()? {
        let pair = attribute.expect(der::SEQUENCE)?.children()?;
        let [oid, values] = pair.as_slice() else { return bad("attribute shape") };
        let values = values.expect(der::SET)?.children()?;
        let Some(value) = values.first() else { return bad("attribute without a value") };
        match oid.oid()?.as_str() {
            OID_SPC_INDIRECT_DATA => {
                let idc = value.expect(der::SEQUENCE)?.children()?;
                let [data, digest_info] = idc.as_slice() else { return bad("SpcIndirectDataContent shape") };
                member.data_type = data.children()?.first().map(|t| t.oid()).transpose()?.unwrap_or_default();
                let digest_info = digest_info.children()?;
                let [algorithm, digest] = digest_info.as_slice() else { return bad("DigestInfo shape") };
                member.digest_algorithm =
                    algorithm.children()?.first().map(|t| t.oid()).transpose()?.unwrap_or_default();
                member.digest = digest.expect(der::OCTET_STRING)?.content.to_vec();
            }
            OID_CAT_MEMBERINFO => {
                let info = value.children()?;
                member.subject_guid = info.first().map(|t| t.bmp_string()).transpose()?;
            }
            OID_CAT_MEMBERINFO2 => {
                if value.tag & 0xe0 != 0x80 {
                    return bad(format!("CAT_MEMBERINFO2 tag {:#x}", value.tag));
                }
                member.member_info2 = Some(value.tag & 0x1f);
            }
            OID_CAT_NAMEVALUE => member.attributes.push(parse_name_value(*value)?),
            _ => {}
        }
    }
    Ok(member)
}
