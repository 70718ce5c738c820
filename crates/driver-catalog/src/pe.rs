//! The Authenticode image hash of a PE file ("Windows Authenticode Portable Executable Signature
//! Format", "Calculating the PE Image Hash"), and the digest an embedded signature carries, both
//! through Google's `authenticode` crate (over `object`'s PE reader).
//!
//! The image hash covers the headers without the CheckSum field and the Certificate Table data
//! directory entry, then the sections in file order, then whatever follows them except the attribute
//! certificate table itself. It is the same for a signed and an unsigned copy of an image, which is
//! what lets a catalog cover an embedded-signed pmupcw.sys. The one rule the crate leaves to its
//! caller: an unsigned image is hashed as if zero-padded to 8 bytes, the length it has once signed
//! (the certificate table starts 8-byte aligned); MakeCat and osslsigncode agree on this.

use std::fmt;

use authenticode::{AttributeCertificateIterator, PeTrait};
use object::read::pe::PeFile64;
use sha1::Digest;

/// Why a file is not a PE image whose hash can be computed, or carries no readable signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeError(pub String);

impl fmt::Display for PeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PE: {}", self.0)
    }
}

impl std::error::Error for PeError {}

fn err<T>(message: impl Into<String>) -> Result<T, PeError> {
    Err(PeError(message.into()))
}

/// True when `data` starts like a PE image ("MZ" and a "PE\0\0" signature where e_lfanew points).
pub fn is_pe(data: &[u8]) -> bool {
    let lfanew = data.get(0x3c..0x40).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    data.starts_with(b"MZ")
        && lfanew.and_then(|at| data.get(at..at.checked_add(4)?)).is_some_and(|s| s == b"PE\0\0")
}

fn parse(data: &[u8]) -> Result<PeFile64<'_>, PeError> {
    if !is_pe(data) {
        return err("no MZ/PE signature");
    }
    PeFile64::parse(data).map_err(|error| PeError(format!("not a PE32+ image: {error}")))
}

/// The Authenticode image hash of `data` with the digest `D` (SHA-1 or SHA-256).
pub fn authenticode_digest<D: Digest + sha1::digest::Update>(data: &[u8]) -> Result<Vec<u8>, PeError> {
    let pe = parse(data)?;
    let table = pe.certificate_table_range().ok().flatten().filter(|range| !range.is_empty());
    if table.as_ref().is_some_and(|table| table.end != data.len()) {
        return err("the certificate table is not at the end of the file");
    }
    let mut digest = D::new();
    authenticode::authenticode_digest(&pe, &mut digest)
        .map_err(|_| PeError("section or header ranges out of bounds".into()))?;
    // The zero padding of an unsigned image comes after everything else the hash covers, so hashing
    // it last is hashing the padded image.
    if table.is_none() && !data.len().is_multiple_of(8) {
        Digest::update(&mut digest, &[0u8; 8][..8 - data.len() % 8]);
    }
    Ok(Digest::finalize(digest).to_vec())
}

/// The image digest recorded in the first Authenticode signature embedded in `data` (its
/// SpcIndirectDataContent's DigestInfo), as the signing tool computed it.
pub fn embedded_signature_digest(data: &[u8]) -> Result<Vec<u8>, PeError> {
    let pe = parse(data)?;
    let mut certificates = AttributeCertificateIterator::new(&pe)
        .map_err(|error| PeError(format!("certificate table: {error}")))?
        .ok_or_else(|| PeError("no certificate table: the image is not signed".into()))?;
    let first = certificates
        .next()
        .ok_or_else(|| PeError("the certificate table is empty".into()))?
        .map_err(|error| PeError(format!("certificate table: {error}")))?;
    let signature =
        first.get_authenticode_signature().map_err(|error| PeError(format!("signature: {error}")))?;
    Ok(signature.digest().to_vec())
}

#[cfg(test)]
mod tests {
    use sha2::Sha256;

    use super::*;

    const OPT: usize = 0x58; // optional header of the synthetic image below
    const SECDIR: usize = OPT + 112 + 4 * 8;

    /// A section-less PE32+ image of `len` bytes, SizeOfHeaders 0x200, bytes past the headers non-zero.
    fn image(len: usize) -> Vec<u8> {
        let mut data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
        data[..0x200].fill(0);
        data[..2].copy_from_slice(b"MZ");
        data[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        data[0x40..0x44].copy_from_slice(b"PE\0\0");
        data[0x44..0x46].copy_from_slice(&0x8664u16.to_le_bytes());
        data[0x54..0x56].copy_from_slice(&240u16.to_le_bytes());
        data[OPT..OPT + 2].copy_from_slice(&0x20bu16.to_le_bytes());
        data[OPT + 32..OPT + 36].copy_from_slice(&0x1000u32.to_le_bytes()); // SectionAlignment
        data[OPT + 36..OPT + 40].copy_from_slice(&0x200u32.to_le_bytes()); // FileAlignment
        data[OPT + 56..OPT + 60].copy_from_slice(&0x1000u32.to_le_bytes()); // SizeOfImage
        data[OPT + 60..OPT + 64].copy_from_slice(&0x200u32.to_le_bytes()); // SizeOfHeaders
        data[OPT + 64..OPT + 68].copy_from_slice(&0xdead_beefu32.to_le_bytes()); // CheckSum
        data[OPT + 108..OPT + 112].copy_from_slice(&16u32.to_le_bytes());
        data
    }

    /// The image hash written out by the specification's steps, for the section-less image above.
    fn expected(data: &[u8], end: usize, pad: usize) -> Vec<u8> {
        let mut digest = Sha256::new();
        Digest::update(&mut digest, &data[..OPT + 64]);
        Digest::update(&mut digest, &data[OPT + 68..SECDIR]);
        Digest::update(&mut digest, &data[SECDIR + 8..end]);
        Digest::update(&mut digest, vec![0u8; pad]);
        digest.finalize().to_vec()
    }

    #[test]
    fn unsigned_image_is_hashed_padded_to_8_bytes() {
        let data = image(0x205);
        assert!(is_pe(&data));
        assert_eq!(authenticode_digest::<Sha256>(&data).unwrap(), expected(&data, 0x205, 3));
        let aligned = image(0x208);
        assert_eq!(authenticode_digest::<Sha256>(&aligned).unwrap(), expected(&aligned, 0x208, 0));
    }

    #[test]
    fn checksum_and_certificate_table_are_left_out() {
        let mut data = image(0x210);
        data[SECDIR..SECDIR + 4].copy_from_slice(&0x208u32.to_le_bytes());
        data[SECDIR + 4..SECDIR + 8].copy_from_slice(&8u32.to_le_bytes());
        let signed = authenticode_digest::<Sha256>(&data).unwrap();
        assert_eq!(signed, expected(&data, 0x208, 0));
        // Another checksum and another certificate give the same hash.
        data[OPT + 64] ^= 0xff;
        data[0x20c] ^= 0xff;
        assert_eq!(authenticode_digest::<Sha256>(&data).unwrap(), signed);
        // A certificate table that is not the file's tail is refused.
        data[SECDIR + 4..SECDIR + 8].copy_from_slice(&4u32.to_le_bytes());
        assert!(authenticode_digest::<Sha256>(&data).is_err());
    }

    #[test]
    fn non_pe_input_is_refused() {
        assert!(!is_pe(b"MZ"));
        assert!(authenticode_digest::<Sha256>(b"[Version]\r\n").is_err());
        assert!(embedded_signature_digest(b"[Version]\r\n").is_err());
    }

    #[test]
    fn an_unsigned_image_has_no_embedded_digest() {
        let error = embedded_signature_digest(&image(0x208)).unwrap_err();
        assert!(error.0.contains("not signed"), "{error}");
    }
}
