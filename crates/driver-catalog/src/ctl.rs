//! The ASN.1 types of a catalog's Certificate Trust List, encoded and decoded with RustCrypto's `der`
//! (the version `authenticode` and `cms` build on). The CMS wrapper is `cms::content_info::ContentInfo`
//! and `cms::signed_data::SignedData`, and a member's SpcIndirectDataContent is `authenticode`'s.
//!
//! Two pieces stay by hand, each because the crate's form would change the bytes or refuse a name:
//!
//! * BMPString content is written as UTF-16BE in an `Any`: `der::asn1::BmpString` holds UCS-2 and
//!   refuses characters outside the Basic Multilingual Plane, which a Windows file name may hold (as
//!   a surrogate pair); the hand-written encoder wrote such names as UTF-16.
//! * Catalog tags and name-value values are UTF-16LE text with a terminating NUL inside an OCTET
//!   STRING: Windows' own layout, not an ASN.1 type.
//!
//! An attribute's value varies with its type, so it is held as an `Any` (as `x509_cert`'s
//! `Attribute` does). `der` orders a SET OF by each element's DER encoding (X.690 11.6): a derived
//! SEQUENCE compares its header, then its fields' encodings in order, which is the order of the
//! whole encodings, the order the hand-written encoder sorted by.

use der::asn1::ContextSpecific;
use der::asn1::{BitString, OctetString, SetOfVec, UtcTime};
use der::{Any, Decode, Encode, Sequence, Tag, TagMode, TagNumber, Tagged};
use spki::{AlgorithmIdentifierOwned, ObjectIdentifier};
use x509_cert::attr::Attribute;
use x509_cert::ext::Extension;

/// CertificateTrustList (wincrypt.h's CTL_INFO, the content of a catalog's SignedData).
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
pub struct CertificateTrustList {
    /// CTL_V1, written only when not the default; MakeCat leaves it out.
    #[asn1(optional = "true")]
    pub version: Option<u32>,
    pub subject_usage: Vec<ObjectIdentifier>,
    #[asn1(optional = "true")]
    pub list_identifier: Option<OctetString>,
    pub this_update: UtcTime,
    #[asn1(optional = "true")]
    pub next_update: Option<UtcTime>,
    pub subject_algorithm: AlgorithmIdentifierOwned,
    #[asn1(optional = "true")]
    pub trusted_subjects: Option<Vec<TrustedSubject>>,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub extensions: Option<Vec<Extension>>,
}

/// One CTL entry: the member's identifier and its attributes (`SEQUENCE { type OID, values SET OF
/// ANY }`, CRYPT_ATTRIBUTE).
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
pub struct TrustedSubject {
    pub identifier: OctetString,
    #[asn1(optional = "true")]
    pub attributes: Option<SetOfVec<Attribute>>,
}

/// CAT_NAMEVALUE: a named text value with CRYPTCAT_ATTR_* flags.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
pub struct CatNameValue {
    /// A BMPString (see [`bmp_string`]).
    pub name: Any,
    pub flags: u32,
    /// UTF-16LE with a terminating NUL.
    pub value: OctetString,
}

/// CAT_MEMBERINFO (version 1 catalogs): the member's SIP GUID and certificate version.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
pub struct CatMemberInfo {
    /// A BMPString (see [`bmp_string`]).
    pub subject_guid: Any,
    pub cert_version: u32,
}

/// SpcPeImageData: the value of an SPC_PE_IMAGE_DATA SpcIndirectDataContent.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
pub struct SpcPeImageData {
    pub flags: BitString,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    pub file: Any,
}

/// `SpcLink ::= file [2] EXPLICIT SpcString`, `SpcString ::= unicode [0] IMPLICIT BMPString`.
pub fn file_link(name: &str) -> der::Result<Any> {
    let unicode =
        Any::new(Tag::ContextSpecific { constructed: false, number: TagNumber::N0 }, utf16be(name))?;
    Any::encode_from(&ContextSpecific {
        tag_number: TagNumber::N2,
        tag_mode: TagMode::Explicit,
        value: unicode,
    })
}

/// An attribute with one value.
pub fn attribute(oid: ObjectIdentifier, value: &impl Encode) -> der::Result<Attribute> {
    Ok(Attribute { oid, values: SetOfVec::try_from(vec![to_any(value)?])? })
}

/// `value`'s encoding as an `Any` (for a field whose type varies).
pub fn to_any(value: &impl Encode) -> der::Result<Any> {
    Any::from_der(&value.to_der()?)
}

/// A BMPString holding `text` as UTF-16BE code units.
pub fn bmp_string(text: &str) -> der::Result<Any> {
    Any::new(Tag::BmpString, utf16be(text))
}

/// The text of a BMPString (UTF-16BE code units; an odd last byte reads as a unit's high half, as
/// before).
pub fn bmp_text(any: &Any) -> der::Result<String> {
    any.tag().assert_eq(Tag::BmpString)?;
    let units: Vec<u16> =
        any.value().chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
    String::from_utf16(&units).map_err(|_| Tag::BmpString.value_error())
}

fn utf16be(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// UTF-16 little-endian with a terminating NUL: how catalogs store tags and name-value values.
pub fn utf16le_nul(text: &str) -> Vec<u8> {
    text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// Decodes UTF-16LE text with an optional terminating NUL (catalog tags and name-value values).
pub fn from_utf16le_nul(bytes: &[u8]) -> Result<String, String> {
    if !bytes.len().is_multiple_of(2) {
        return Err("odd-length UTF-16 text".into());
    }
    let mut units: Vec<u16> = bytes.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    if units.last() == Some(&0) {
        units.pop();
    }
    String::from_utf16(&units).map_err(|_| "text is not UTF-16".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_of_attributes_sorts_by_whole_encoding() {
        // A short value under a larger OID encodes shorter, so its SEQUENCE length sorts it first,
        // although its OID sorts last.
        let high = attribute(ObjectIdentifier::new_unwrap("1.3.6.1.4.1.311.12.2.3"), &Any::null()).unwrap();
        let low = attribute(
            ObjectIdentifier::new_unwrap("1.3.6.1.4.1.311.2.1.4"),
            &OctetString::new([0u8; 40]).unwrap(),
        )
        .unwrap();
        let set = SetOfVec::try_from(vec![low.clone(), high.clone()]).unwrap();
        assert!(high.to_der().unwrap() < low.to_der().unwrap());
        assert_eq!(set.as_slice(), [high, low]);
    }

    #[test]
    fn bmp_strings_keep_surrogate_pairs() {
        let text = "a\u{1F600}";
        let any = bmp_string(text).unwrap();
        assert_eq!(any.to_der().unwrap(), [0x1e, 6, 0, b'a', 0xd8, 0x3d, 0xde, 0x00]);
        assert_eq!(bmp_text(&any).unwrap(), text);
    }

    #[test]
    fn file_links_are_explicit_2_over_implicit_0() {
        assert_eq!(file_link("").unwrap().to_der().unwrap(), [0xa2, 2, 0x80, 0]);
        assert_eq!(file_link("A").unwrap().to_der().unwrap(), [0xa2, 4, 0x80, 2, 0, b'A']);
    }

    #[test]
    fn utf16le_text_round_trips() {
        assert_eq!(utf16le_nul("A"), [b'A', 0, 0, 0]);
        assert_eq!(from_utf16le_nul(&utf16le_nul("pmupcw.sys")).unwrap(), "pmupcw.sys");
        assert!(from_utf16le_nul(&[1, 2, 3]).is_err());
    }
}
