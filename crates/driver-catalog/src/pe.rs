//! The Authenticode image hash of a PE file ("Windows Authenticode Portable Executable Signature
//! Format", "Calculating the PE Image Hash"): the headers without the CheckSum field and the
//! Certificate Table data directory entry, then the sections in file order, then whatever follows
//! them except the attribute certificate table itself. It is the same for a signed and an unsigned
//! copy of an image (an unsigned one is hashed as if zero-padded to 8 bytes, as it is once signed),
//! which is what lets a catalog cover an embedded-signed pmupcw.sys.

use std::fmt;

use sha1::Digest;

/// Why a file is not a PE image whose hash can be computed.
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

fn u16_at(data: &[u8], offset: usize) -> Result<u16, PeError> {
    match data.get(offset..offset + 2) {
        Some(b) => Ok(u16::from_le_bytes([b[0], b[1]])),
        None => err(format!("truncated at {offset:#x}")),
    }
}

fn u32_at(data: &[u8], offset: usize) -> Result<u32, PeError> {
    match data.get(offset..offset + 4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => err(format!("truncated at {offset:#x}")),
    }
}

/// True when `data` starts like a PE image ("MZ" and a "PE\0\0" signature where e_lfanew points).
pub fn is_pe(data: &[u8]) -> bool {
    data.starts_with(b"MZ")
        && u32_at(data, 0x3c)
            .ok()
            .and_then(|lfanew| data.get(lfanew as usize..lfanew as usize + 4))
            .is_some_and(|sig| sig == b"PE\0\0")
}

/// Feeds the bytes the Authenticode image hash covers to `digest`.
pub fn authenticode_digest<D: Digest>(data: &[u8]) -> Result<Vec<u8>, PeError> {
    if !is_pe(data) {
        return err("no MZ/PE signature");
    }
    let pe = u32_at(data, 0x3c)? as usize;
    let file_header = pe + 4;
    let section_count = usize::from(u16_at(data, file_header + 2)?);
    let optional_size = usize::from(u16_at(data, file_header + 16)?);
    let optional = file_header + 20;
    let magic = u16_at(data, optional)?;
    let directories = match magic {
        0x10b => optional + 96,
        0x20b => optional + 112,
        _ => return err(format!("optional header magic {magic:#x}")),
    };
    let checksum = optional + 64;
    let directory_count = u32_at(data, directories - 4)? as usize;
    if directory_count < 5 {
        return err("no Certificate Table data directory");
    }
    let security = directories + 4 * 8;
    let size_of_headers = u32_at(data, optional + 60)? as usize;
    let (cert_offset, cert_size) = (u32_at(data, security)? as usize, u32_at(data, security + 4)? as usize);
    if size_of_headers > data.len() || security + 8 > size_of_headers {
        return err("SizeOfHeaders out of range");
    }

    let mut digest = D::new();
    digest.update(&data[..checksum]);
    digest.update(&data[checksum + 4..security]);
    digest.update(&data[security + 8..size_of_headers]);

    // Sections with raw data, in file order.
    let section_table = optional + optional_size;
    let mut sections = Vec::with_capacity(section_count);
    for index in 0..section_count {
        let header = section_table + index * 40;
        let size = u32_at(data, header + 16)? as usize;
        let offset = u32_at(data, header + 20)? as usize;
        if size == 0 {
            continue;
        }
        match offset.checked_add(size) {
            Some(end) if end <= data.len() => sections.push((offset, size)),
            _ => return err(format!("section {index} runs past the end of the file")),
        }
    }
    sections.sort_unstable();
    let mut hashed_end = size_of_headers;
    for &(offset, size) in &sections {
        digest.update(&data[offset..offset + size]);
        hashed_end = hashed_end.max(offset + size);
    }

    // Data after the last section, less the certificate table (which must be the file's tail).
    let end = if cert_size == 0 {
        data.len()
    } else {
        if cert_offset.checked_add(cert_size) != Some(data.len()) || cert_offset < hashed_end {
            return err("the certificate table is not at the end of the file");
        }
        cert_offset
    };
    if end > hashed_end {
        digest.update(&data[hashed_end..end]);
    }
    // An image without a certificate table is hashed as if zero-padded to a multiple of 8 bytes, the
    // length it has once signed (the certificate table starts 8-byte aligned). MakeCat and
    // osslsigncode agree on this for an unaligned unsigned image.
    if cert_size == 0 && !data.len().is_multiple_of(8) {
        digest.update(&[0u8; 8][..8 - data.len() % 8]);
    }
    Ok(digest.finalize().to_vec())
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
        data[OPT + 60..OPT + 64].copy_from_slice(&0x200u32.to_le_bytes());
        data[OPT + 64..OPT + 68].copy_from_slice(&0xdead_beefu32.to_le_bytes()); // CheckSum
        data[OPT + 108..OPT + 112].copy_from_slice(&16u32.to_le_bytes());
        data
    }

    fn expected(data: &[u8], end: usize, pad: usize) -> Vec<u8> {
        let mut digest = Sha256::new();
        digest.update(&data[..OPT + 64]);
        digest.update(&data[OPT + 68..SECDIR]);
        digest.update(&data[SECDIR + 8..end]);
        digest.update(vec![0u8; pad]);
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
    }
}
