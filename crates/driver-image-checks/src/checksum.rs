//! The PE checksum, the one piece of binary logic no parsing library computes: the optional header's
//! CheckSum as link.exe /RELEASE, lld-link /RELEASE and imagehlp's `CheckSumMappedFile` compute it,
//! checked by rule `Rule::Checksum` and stored again by tests that mutate an image.

use std::ops::Range;

use goblin::error::Error;
use goblin::pe::header::{DosHeader, SIZEOF_COFF_HEADER, SIZEOF_PE_MAGIC};
use goblin::pe::optional_header::{OFFSET_WINDOWS_FIELDS_64_CHECKSUM, SIZEOF_STANDARD_FIELDS_64};

/// The PE checksum of the image, as link.exe /RELEASE, lld-link /RELEASE and imagehlp's
/// `CheckSumMappedFile` compute it.
pub fn compute_checksum(bytes: &[u8]) -> Result<u32, Error> {
    Ok(pe_checksum(bytes, checksum_field(bytes)?))
}

/// Stores the correct checksum in the image, as a linker would after building it. Tests use it so
/// that a mutation of the image breaks only the rule it targets, not also
/// [`Rule::Checksum`](crate::Rule::Checksum).
pub fn recompute_checksum(bytes: &mut [u8]) -> Result<(), Error> {
    let field = checksum_field(bytes)?;
    let checksum = pe_checksum(bytes, field.clone());
    bytes[field].copy_from_slice(&checksum.to_le_bytes());
    Ok(())
}

/// Where the optional header's CheckSum field lies in the file. goblin reads the field but does not
/// say where it is; its offset within the optional header is the same for PE32 and PE32+.
fn checksum_field(bytes: &[u8]) -> Result<Range<usize>, Error> {
    let optional_header = DosHeader::parse(bytes)?.pe_pointer as usize + SIZEOF_PE_MAGIC + SIZEOF_COFF_HEADER;
    let start = optional_header + SIZEOF_STANDARD_FIELDS_64 + OFFSET_WINDOWS_FIELDS_64_CHECKSUM;
    if start + 4 > bytes.len() {
        return Err(Error::Malformed(format!(
            "the CheckSum field at {start:#x} lies past the end of the file"
        )));
    }
    Ok(start..start + 4)
}

/// The PE checksum algorithm: the file read as little-endian 16-bit words (an odd last byte padded
/// with zero) with the `skipped` CheckSum field read as zeros, added with the carry out of bit 15
/// folded back in after every addition, plus the file length.
fn pe_checksum(bytes: &[u8], skipped: Range<usize>) -> u32 {
    let byte =
        |offset: usize| if skipped.contains(&offset) { 0 } else { bytes.get(offset).copied().unwrap_or(0) };
    let words =
        (0..bytes.len()).step_by(2).map(|offset| u16::from_le_bytes([byte(offset), byte(offset + 1)]));
    let folded = words.fold(0u32, |sum, word| {
        let sum = sum + u32::from(word);
        (sum & 0xffff) + (sum >> 16)
    });
    // An image cannot exceed 4 GiB (SizeOfImage and the section offsets are 32-bit).
    folded.wrapping_add(bytes.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::pe_checksum;

    /// Hand-computed: 0xffff + 0x0002 = 0x10001, whose carry folds back in to 0x0002; the trailing
    /// odd byte 0x05 is the word 0x0005, giving 0x0007; plus the length 5 is 0x000c.
    #[test]
    fn checksum_folds_carries_and_pads_an_odd_last_byte() {
        assert_eq!(pe_checksum(&[0xff, 0xff, 0x02, 0x00, 0x05], 0..0), 0x000c);
    }

    /// The skipped field counts as zeros, whatever it holds: 0x0102 + 0x0000 + length 6.
    #[test]
    fn checksum_reads_the_checksum_field_as_zero() {
        assert_eq!(pe_checksum(&[0x02, 0x01, 0xaa, 0xbb, 0xcc, 0xdd], 2..6), 0x0102 + 6);
    }
}
