//! Builds and reads a driver catalog: a PKCS #7 SignedData whose content is a Microsoft Certificate
//! Trust List (CTL, 1.3.6.1.4.1.311.10.1) with entries keyed by file hash.
//!
//! Version 2 (the default; SHA-256) is laid out as MakeCat writes it for `CatalogVersion=2`,
//! `HashAlgorithms=SHA256`, checked once by hand against such a MakeCat catalog; version 1
//! (`CatalogVersion::V1`; SHA-1 only) as CryptCATPersistStore fills the CTL. The structures are
//! RustCrypto types encoded by `der` (see [`crate::ctl`], which also says what stays by hand); `read`
//! parses a catalog back with the same types. The bytes are pinned by tests/unsigned_bytes.rs. The
//! ASN.1 layout and every entry's attributes: `docs/catalog.md`.

use std::fmt;
use std::time::Duration;

use authenticode::{DigestInfo, SpcAttributeTypeAndOptionalValue, SpcIndirectDataContent};
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{EncapsulatedContentInfo, SignedData, SignerInfos};
use der::asn1::{BitString, OctetString, SetOfVec, UtcTime};
use der::{Any, Encode};
use sha1::{Digest, Sha1};
use sha2::Sha256;
use spki::{AlgorithmIdentifierOwned, ObjectIdentifier};
use x509_cert::attr::Attribute;
use x509_cert::ext::Extension;

use crate::ctl::{self, CatMemberInfo, CatNameValue, CertificateTrustList, SpcPeImageData, TrustedSubject};
use crate::pe;

mod read;

pub use read::{ParsedCatalog, ParsedMember, parse_catalog};

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
const MEMBER_CERT_VERSION: u32 = 0x200;
/// CRYPTCAT_ATTR_AUTHENTICATED | CRYPTCAT_ATTR_DATAASCII | CRYPTCAT_ATTR_NAMEASCII.
pub const NAMEVALUE_FLAGS: u32 = 0x1001_0001;

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

/// An OID constant of this module in the `der` form.
fn oid(dotted: &str) -> ObjectIdentifier {
    ObjectIdentifier::new_unwrap(dotted)
}

/// `{ algorithm, NULL }`, the AlgorithmIdentifier form MakeCat writes.
fn algorithm_with_null(dotted: &str) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned { oid: oid(dotted), parameters: Some(Any::null()) }
}

fn name_value(name: &str, value: &str) -> der::Result<CatNameValue> {
    Ok(CatNameValue {
        name: ctl::bmp_string(name)?,
        flags: NAMEVALUE_FLAGS,
        value: OctetString::new(ctl::utf16le_nul(value))?,
    })
}

fn indirect_data(member: &Member, version: CatalogVersion) -> der::Result<SpcIndirectDataContent> {
    let data = match member.kind {
        // SpcPeImageData with empty flags and the "<<<Obsolete>>>" name signtool writes (no page
        // hashes).
        MemberKind::Pe => SpcAttributeTypeAndOptionalValue {
            value_type: oid(OID_SPC_PE_IMAGE_DATA),
            value: ctl::to_any(&SpcPeImageData {
                flags: BitString::new(0, [])?,
                file: ctl::file_link(OBSOLETE)?,
            })?,
        },
        // The flat-file SIP's link is an empty file name (MakeCat's output).
        MemberKind::Flat => {
            SpcAttributeTypeAndOptionalValue { value_type: oid(OID_SPC_CAB_DATA), value: ctl::file_link("")? }
        }
    };
    let (algorithm, digest) = match version {
        CatalogVersion::V1 => (OID_SHA1, &member.sha1),
        CatalogVersion::V2 => (OID_SHA256, &member.sha256),
    };
    let message_digest = DigestInfo {
        digest_algorithm: algorithm_with_null(algorithm),
        digest: OctetString::new(digest.as_slice())?,
    };
    Ok(SpcIndirectDataContent { data, message_digest })
}

fn trusted_subject(identifier: Vec<u8>, attributes: Vec<Attribute>) -> der::Result<TrustedSubject> {
    Ok(TrustedSubject {
        identifier: OctetString::new(identifier)?,
        attributes: Some(SetOfVec::try_from(attributes)?),
    })
}

/// The CTL entries of one member.
fn member_entries(member: &Member, options: &CatalogOptions) -> der::Result<Vec<TrustedSubject>> {
    let name_values = [("File", member.file_name.as_str()), ("OSAttr", options.os_attr.as_str())];
    let mut names = Vec::new();
    for (name, value) in name_values {
        names.push(ctl::attribute(oid(OID_CAT_NAMEVALUE), &name_value(name, value)?)?);
    }
    let indirect = ctl::attribute(oid(OID_SPC_INDIRECT_DATA), &indirect_data(member, options.version)?)?;
    match options.version {
        CatalogVersion::V1 => {
            let member_info = CatMemberInfo {
                subject_guid: ctl::bmp_string(member.kind.sip_guid())?,
                cert_version: MEMBER_CERT_VERSION,
            };
            let mut attributes = vec![indirect, ctl::attribute(oid(OID_CAT_MEMBERINFO), &member_info)?];
            attributes.extend(names);
            Ok(vec![trusted_subject(ctl::utf16le_nul(&member.tag()), attributes)?])
        }
        CatalogVersion::V2 => {
            // An empty [n] IMPLICIT choice: n names the member's SIP.
            let choice = der::Tag::ContextSpecific {
                constructed: false,
                number: der::TagNumber::new(member.kind.member_info2_tag()),
            };
            let member_info = ctl::attribute(oid(OID_CAT_MEMBERINFO2), &Any::new(choice, [])?)?;
            let mut attributes = vec![indirect, member_info.clone()];
            attributes.extend(names);
            Ok(vec![
                trusted_subject(member.sha256.clone(), attributes)?,
                trusted_subject(member.sha1.clone(), vec![member_info])?,
            ])
        }
    }
}

/// The CertificateTrustList listing `members`.
pub fn build_ctl(members: &[Member], options: &CatalogOptions) -> Result<CertificateTrustList, CatalogError> {
    let mut entries = Vec::new();
    for member in members {
        entries.extend(member_entries(member, options)?);
    }
    // Sorted by subjectIdentifier, then (for equal identifiers) by encoding, as before.
    let mut keyed =
        entries.into_iter().map(|entry| Ok((entry.to_der()?, entry))).collect::<der::Result<Vec<_>>>()?;
    keyed.sort_by(|(a, x), (b, y)| {
        x.identifier.as_bytes().cmp(y.identifier.as_bytes()).then_with(|| a.cmp(b))
    });
    let mut id_hash = Sha1::new();
    for member in members {
        id_hash.update(&member.sha256);
        id_hash.update(member.file_name.as_bytes());
    }
    let extension = |name: &str, value: &str| -> der::Result<Extension> {
        let extn_value = OctetString::new(name_value(name, value)?.to_der()?)?;
        Ok(Extension { extn_id: oid(OID_CAT_NAMEVALUE), critical: false, extn_value })
    };
    let subject_algorithm = match options.version {
        CatalogVersion::V1 => OID_CATALOG_LIST_MEMBER,
        CatalogVersion::V2 => OID_CATALOG_LIST_MEMBER2,
    };
    let this_update = UtcTime::from_unix_duration(Duration::from_secs(options.this_update)).map_err(|e| {
        CatalogError(format!("thisUpdate {} cannot be a UTCTime (1950 to 2049): {e}", options.this_update))
    })?;
    Ok(CertificateTrustList {
        version: None,
        subject_usage: vec![oid(OID_CATALOG_LIST)],
        list_identifier: Some(OctetString::new(&id_hash.finalize()[..16])?),
        this_update,
        next_update: None,
        subject_algorithm: algorithm_with_null(subject_algorithm),
        trusted_subjects: Some(keyed.into_iter().map(|(_, entry)| entry).collect()),
        extensions: Some(vec![extension("OSAttr", &options.os_attr)?, extension("OS", &options.os)?]),
    })
}

/// The unsigned catalog: a SignedData with no signers around the CTL, the form MakeCat writes before
/// signtool signs it and the form `osslsigncode sign` accepts as a CAT file.
pub fn build_unsigned_catalog(members: &[Member], options: &CatalogOptions) -> Result<Vec<u8>, CatalogError> {
    let signed_data = SignedData {
        version: CmsVersion::V1,
        digest_algorithms: SetOfVec::new(),
        encap_content_info: EncapsulatedContentInfo {
            econtent_type: oid(OID_CTL),
            econtent: Some(ctl::to_any(&build_ctl(members, options)?)?),
        },
        certificates: None,
        crls: None,
        signer_infos: SignerInfos(SetOfVec::new()),
    };
    let content_info =
        ContentInfo { content_type: oid(OID_SIGNED_DATA), content: ctl::to_any(&signed_data)? };
    Ok(content_info.to_der()?)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError(pub String);

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "catalog: {}", self.0)
    }
}

impl std::error::Error for CatalogError {}

impl From<der::Error> for CatalogError {
    fn from(e: der::Error) -> Self {
        CatalogError(format!("DER: {e}"))
    }
}
