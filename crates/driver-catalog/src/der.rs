//! Minimal DER writer and reader: just the universal types a catalog uses (SEQUENCE, SET OF, OBJECT
//! IDENTIFIER, OCTET STRING, INTEGER, NULL, BIT STRING, BMPString, UTCTime) and context tags.
//!
//! A catalog is a few kilobytes of nested TLVs with fixed shapes, so a hand-written encoder keeps the
//! crate to two hash dependencies; every length is definite (DER), which is all the reader accepts.

use std::fmt;

pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const NULL: u8 = 0x05;
pub const OID: u8 = 0x06;
pub const UTC_TIME: u8 = 0x17;
pub const BMP_STRING: u8 = 0x1e;
pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;

/// Encodes one TLV.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = (len as u64).to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (8 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// SEQUENCE of already encoded elements, in the given order.
pub fn sequence(elements: &[Vec<u8>]) -> Vec<u8> {
    tlv(SEQUENCE, &elements.concat())
}

/// SET OF already encoded elements, sorted by their encodings as DER requires.
pub fn set_of(elements: &[Vec<u8>]) -> Vec<u8> {
    let mut sorted: Vec<&Vec<u8>> = elements.iter().collect();
    sorted.sort();
    let content: Vec<u8> = sorted.into_iter().flatten().copied().collect();
    tlv(SET, &content)
}

/// `[n]` constructed (EXPLICIT, or IMPLICIT over a constructed type).
pub fn context(n: u8, content: &[u8]) -> Vec<u8> {
    tlv(0xa0 | n, content)
}

/// `[n]` IMPLICIT over a primitive type.
pub fn context_primitive(n: u8, content: &[u8]) -> Vec<u8> {
    tlv(0x80 | n, content)
}

pub fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(OCTET_STRING, bytes)
}

pub fn null() -> Vec<u8> {
    tlv(NULL, &[])
}

/// Non-negative INTEGER.
pub fn integer(value: u64) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count().min(7);
    let mut content = Vec::new();
    if bytes[skip] & 0x80 != 0 {
        content.push(0);
    }
    content.extend_from_slice(&bytes[skip..]);
    tlv(INTEGER, &content)
}

/// OBJECT IDENTIFIER from its dotted form. Panics on a malformed constant (all callers pass literals).
pub fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted.split('.').map(|arc| arc.parse().expect("OID arc")).collect();
    assert!(arcs.len() >= 2 && arcs[0] <= 2, "OID {dotted}");
    let mut content = Vec::new();
    let mut push_arc = |mut value: u64| {
        let mut groups = vec![(value & 0x7f) as u8];
        value >>= 7;
        while value > 0 {
            groups.push(0x80 | (value & 0x7f) as u8);
            value >>= 7;
        }
        content.extend(groups.iter().rev());
    };
    push_arc(arcs[0] * 40 + arcs[1]);
    for &arc in &arcs[2..] {
        push_arc(arc);
    }
    tlv(OID, &content)
}

/// UTF-16 big-endian code units, as a BMPString holds them.
pub fn bmp_string(text: &str) -> Vec<u8> {
    let content: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    tlv(BMP_STRING, &content)
}

/// UTF-16 little-endian with a terminating NUL: how catalogs store tags and name-value values.
pub fn utf16le_nul(text: &str) -> Vec<u8> {
    text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// UTCTime `YYMMDDHHMMSSZ` for seconds since the Unix epoch (years 1950..2049).
pub fn utc_time(unix_seconds: u64) -> Vec<u8> {
    let time = time::OffsetDateTime::from_unix_timestamp(unix_seconds as i64)
        .expect("seconds since 1970 that fit a UTCTime are a valid timestamp");
    let text = format!(
        "{:02}{:02}{:02}{:02}{:02}{:02}Z",
        time.year() % 100,
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second()
    );
    tlv(UTC_TIME, text.as_bytes())
}

/// A malformed or unexpected encoding met by the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerError(pub String);

impl fmt::Display for DerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DER: {}", self.0)
    }
}

impl std::error::Error for DerError {}

fn err<T>(message: impl Into<String>) -> Result<T, DerError> {
    Err(DerError(message.into()))
}

/// One decoded TLV: its tag, its content octets and its whole encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub content: &'a [u8],
    pub raw: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// Reads the TLV at the start of `input`; returns it and the bytes after it.
    pub fn read(input: &'a [u8]) -> Result<(Tlv<'a>, &'a [u8]), DerError> {
        let [tag, first, ..] = *input else { return err("truncated header") };
        if tag & 0x1f == 0x1f {
            return err("high tag numbers are not used in catalogs");
        }
        let (len, header) = if first < 0x80 {
            (usize::from(first), 2)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || input.len() < 2 + count {
                return err(format!("bad length of length {first:#x}"));
            }
            let len = input[2..2 + count].iter().fold(0usize, |acc, &b| acc << 8 | usize::from(b));
            (len, 2 + count)
        };
        let end = header.checked_add(len).filter(|&end| end <= input.len());
        let Some(end) = end else { return err(format!("length {len} runs past the input")) };
        let tlv = Tlv { tag, content: &input[header..end], raw: &input[..end] };
        Ok((tlv, &input[end..]))
    }

    /// Reads exactly one TLV that fills `input`.
    pub fn read_all(input: &'a [u8]) -> Result<Tlv<'a>, DerError> {
        let (tlv, rest) = Tlv::read(input)?;
        if !rest.is_empty() {
            return err(format!("{} trailing bytes", rest.len()));
        }
        Ok(tlv)
    }

    /// This TLV, checked to have `tag`.
    pub fn expect(self, tag: u8) -> Result<Tlv<'a>, DerError> {
        if self.tag != tag {
            return err(format!("expected tag {tag:#04x}, found {:#04x}", self.tag));
        }
        Ok(self)
    }

    /// The TLVs inside a constructed TLV.
    pub fn children(&self) -> Result<Vec<Tlv<'a>>, DerError> {
        if self.tag & 0x20 == 0 {
            return err(format!("tag {:#04x} is not constructed", self.tag));
        }
        let mut rest = self.content;
        let mut out = Vec::new();
        while !rest.is_empty() {
            let (child, after) = Tlv::read(rest)?;
            out.push(child);
            rest = after;
        }
        Ok(out)
    }

    /// The dotted form of an OBJECT IDENTIFIER.
    pub fn oid(&self) -> Result<String, DerError> {
        self.expect(OID)?;
        let mut arcs = Vec::new();
        let mut value: u64 = 0;
        for &b in self.content {
            value = value << 7 | u64::from(b & 0x7f);
            if b & 0x80 == 0 {
                arcs.push(value);
                value = 0;
            }
        }
        let Some(&first) = arcs.first() else { return err("empty OID") };
        let (a, b) = if first < 80 { (first / 40, first % 40) } else { (2, first - 80) };
        let mut text = format!("{a}.{b}");
        for arc in &arcs[1..] {
            text.push_str(&format!(".{arc}"));
        }
        Ok(text)
    }

    /// The text of a BMPString.
    pub fn bmp_string(&self) -> Result<String, DerError> {
        self.expect(BMP_STRING)?;
        let units: Vec<u16> =
            self.content.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
        String::from_utf16(&units).or_else(|_| err("BMPString is not UTF-16"))
    }

    /// A non-negative INTEGER that fits in 64 bits.
    pub fn integer(&self) -> Result<u64, DerError> {
        self.expect(INTEGER)?;
        if self.content.is_empty() || self.content.len() > 9 || self.content[0] & 0x80 != 0 {
            return err("INTEGER out of range");
        }
        Ok(self.content.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    }
}

/// Decodes UTF-16LE text with an optional terminating NUL (catalog tags and name-value values).
pub fn from_utf16le_nul(bytes: &[u8]) -> Result<String, DerError> {
    if !bytes.len().is_multiple_of(2) {
        return err("odd-length UTF-16 text");
    }
    let mut units: Vec<u16> = bytes.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    if units.last() == Some(&0) {
        units.pop();
    }
    String::from_utf16(&units).or_else(|_| err("text is not UTF-16"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oid_round_trips() {
        for text in
            ["1.3.6.1.4.1.311.12.1.1", "1.2.840.113549.1.7.2", "2.16.840.1.101.3.4.2.1", "1.3.14.3.2.26"]
        {
            let encoded = oid(text);
            assert_eq!(Tlv::read_all(&encoded).unwrap().oid().unwrap(), text);
        }
        // Known encoding: 1.2.840.113549.1.7.2 (signedData).
        assert_eq!(oid("1.2.840.113549.1.7.2"), [6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 7, 2]);
    }

    #[test]
    fn long_lengths_and_integers() {
        let big = tlv(OCTET_STRING, &[7; 300]);
        assert_eq!(&big[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(Tlv::read_all(&big).unwrap().content.len(), 300);
        assert_eq!(integer(0), [2, 1, 0]);
        assert_eq!(integer(512), [2, 2, 2, 0]);
        assert_eq!(integer(0x1001_0001), [2, 4, 0x10, 0x01, 0x00, 0x01]);
        assert_eq!(integer(0x80), [2, 2, 0, 0x80]);
        assert_eq!(Tlv::read_all(&integer(0x80)).unwrap().integer().unwrap(), 0x80);
    }

    #[test]
    fn utc_time_formats_dates() {
        assert_eq!(utc_time(0), tlv(UTC_TIME, b"700101000000Z"));
        // 2024-02-29 12:34:56 UTC
        assert_eq!(utc_time(1_709_210_096), tlv(UTC_TIME, b"240229123456Z"));
    }

    #[test]
    fn set_of_is_sorted() {
        let set = set_of(&[integer(5), integer(1)]);
        assert_eq!(set, [0x31, 6, 2, 1, 1, 2, 1, 5]);
    }

    #[test]
    fn reader_rejects_overruns() {
        assert!(Tlv::read(&[0x30, 0x05, 0x01]).is_err());
        assert!(Tlv::read(&[0x30]).is_err());
        assert!(Tlv::read_all(&[0x05, 0x00, 0x00]).is_err());
    }
}
