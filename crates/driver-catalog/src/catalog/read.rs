//! Reading a catalog (signed or not) back into its parts: the CMS wrapper with `cms`, the CTL with
//! the types of [`crate::ctl`].

use cms::content_info::ContentInfo;
use cms::signed_data::SignedData;
use der::asn1::{OctetString, SetOfVec, UtcTime};
use der::{Any, Decode, Tagged};
use spki::ObjectIdentifier;

use super::{
    CatalogError, OID_CAT_MEMBERINFO, OID_CAT_MEMBERINFO2, OID_CAT_NAMEVALUE, OID_CATALOG_LIST_MEMBER,
    OID_CTL, OID_SIGNED_DATA, OID_SPC_INDIRECT_DATA, hex, oid,
};
use crate::ctl::{self, CatMemberInfo, CatNameValue, CertificateTrustList, TrustedSubject};
use authenticode::SpcIndirectDataContent;

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

fn bad<T>(message: impl Into<String>) -> Result<T, CatalogError> {
    Err(CatalogError(message.into()))
}

fn parse_name_value(name_value: &CatNameValue) -> Result<(String, String), CatalogError> {
    let value = ctl::from_utf16le_nul(name_value.value.as_bytes()).map_err(CatalogError)?;
    Ok((ctl::bmp_text(&name_value.name)?, value))
}

/// Reads a catalog (signed or not) back into its parts.
pub fn parse_catalog(bytes: &[u8]) -> Result<ParsedCatalog, CatalogError> {
    let content_info = ContentInfo::from_der(bytes)?;
    if content_info.content_type != oid(OID_SIGNED_DATA) {
        return bad("not a SignedData");
    }
    let signed: SignedData = content_info.content.decode_as()?;
    let inner = &signed.encap_content_info;
    if inner.econtent_type != oid(OID_CTL) {
        return bad(format!("content type {} is not a CTL", inner.econtent_type));
    }
    let Some(ctl) = &inner.econtent else { return bad("the SignedData holds no CTL") };
    let ctl: CertificateTrustList = ctl.decode_as()?;
    let text_tags = ctl.subject_algorithm.oid == oid(OID_CATALOG_LIST_MEMBER);
    let members = ctl
        .trusted_subjects
        .iter()
        .flatten()
        .map(|entry| parse_member(entry, text_tags))
        .collect::<Result<Vec<_>, _>>()?;
    let mut attributes = Vec::new();
    for extension in ctl.extensions.iter().flatten() {
        if extension.extn_id == oid(OID_CAT_NAMEVALUE) {
            attributes.push(parse_name_value(&CatNameValue::from_der(extension.extn_value.as_bytes())?)?);
        }
    }
    Ok(ParsedCatalog {
        subject_usage: ctl.subject_usage.iter().map(ToString::to_string).collect(),
        list_identifier: ctl.list_identifier.map(OctetString::into_bytes).unwrap_or_default(),
        this_update: utc_time_text(&ctl.this_update),
        subject_algorithm: ctl.subject_algorithm.oid.to_string(),
        members,
        attributes,
        signer_count: signed.signer_infos.0.len(),
        has_certificates: signed.certificates.is_some(),
    })
}

/// UTCTime's DER text, `YYMMDDHHMMSSZ`.
fn utc_time_text(time: &UtcTime) -> String {
    let time = time.to_date_time();
    let (y, mo, d, h, mi, s) =
        (time.year() % 100, time.month(), time.day(), time.hour(), time.minutes(), time.seconds());
    format!("{y:02}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z")
}

fn parse_member(entry: &TrustedSubject, text_tags: bool) -> Result<ParsedMember, CatalogError> {
    let identifier = entry.identifier.as_bytes().to_vec();
    let tag =
        if text_tags { ctl::from_utf16le_nul(&identifier).map_err(CatalogError)? } else { hex(&identifier) };
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
    for attribute in entry.attributes.iter().flat_map(SetOfVec::iter) {
        let Some(value) = attribute.values.get(0) else { return bad("attribute without a value") };
        read_member_attribute(&mut member, &attribute.oid, value)?;
    }
    Ok(member)
}

/// Records what one CTL entry attribute says about its member.
fn read_member_attribute(
    member: &mut ParsedMember,
    kind: &ObjectIdentifier,
    value: &Any,
) -> Result<(), CatalogError> {
    match kind.to_string().as_str() {
        OID_SPC_INDIRECT_DATA => {
            let indirect: SpcIndirectDataContent = value.decode_as()?;
            member.data_type = indirect.data.value_type.to_string();
            member.digest_algorithm = indirect.message_digest.digest_algorithm.oid.to_string();
            member.digest = indirect.message_digest.digest.into_bytes();
        }
        OID_CAT_MEMBERINFO => {
            let info: CatMemberInfo = value.decode_as()?;
            member.subject_guid = Some(ctl::bmp_text(&info.subject_guid)?);
        }
        OID_CAT_MEMBERINFO2 => match value.tag() {
            der::Tag::ContextSpecific { number, .. } => member.member_info2 = Some(number.value()),
            other => return bad(format!("CAT_MEMBERINFO2 tag {other}")),
        },
        OID_CAT_NAMEVALUE => member.attributes.push(parse_name_value(&value.decode_as()?)?),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{CatalogOptions, Member, MemberKind, build_unsigned_catalog};
    use super::*;

    fn catalog(this_update: u64) -> Result<Vec<u8>, CatalogError> {
        let member = Member {
            file_name: "a.sys".into(),
            kind: MemberKind::Flat,
            sha1: vec![1; 20],
            sha256: vec![2; 32],
        };
        build_unsigned_catalog(&[member], &CatalogOptions { this_update, ..CatalogOptions::default() })
    }

    #[test]
    fn this_update_reads_back_as_its_utc_time_text() {
        // 2024-02-29 12:34:56 UTC; and the epoch.
        assert_eq!(parse_catalog(&catalog(1_709_210_096).unwrap()).unwrap().this_update, "240229123456Z");
        assert_eq!(parse_catalog(&catalog(0).unwrap()).unwrap().this_update, "700101000000Z");
    }

    #[test]
    fn a_time_utc_time_cannot_hold_is_an_error() {
        // 2050-01-01 00:00:00 UTC: UTCTime's two-digit years end with 2049 (RFC 5280 4.1.2.5.1).
        let error = catalog(2_524_608_000).unwrap_err();
        assert!(error.0.contains("cannot be a UTCTime"), "{error}");
    }

    #[test]
    fn truncated_and_foreign_encodings_are_rejected() {
        let bytes = catalog(0).unwrap();
        assert!(parse_catalog(&bytes[..bytes.len() - 1]).is_err());
        assert!(parse_catalog(&[0x30]).is_err());
        // A ContentInfo of another type (id-data, 1.2.840.113549.1.7.1).
        let data = [0x30, 0x0f, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 7, 1, 0xa0, 2, 0x04, 0];
        assert_eq!(parse_catalog(&data).unwrap_err().0, "not a SignedData");
    }
}
