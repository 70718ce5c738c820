//! RtlUpcaseUnicodeChar and the C memory routines ntoskrnl exports.

use super::call::enter;
use crate::cpu::{DISPATCH_LEVEL, HIGH_LEVEL};

/// The kernel's upcase of one UTF-16 code unit: a 1:1 table, so characters whose upper case is not a
/// single BMP code unit (e.g. 'ß') stay as they are.
pub fn upcase(unit: u16) -> u16 {
    let Some(c) = char::from_u32(u32::from(unit)) else { return unit };
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(single), None) if (single as u32) <= 0xFFFF => single as u32 as u16,
        _ => unit,
    }
}

/// `WCHAR RtlUpcaseUnicodeChar(WCHAR SourceCharacter)`: IRQL <= DISPATCH_LEVEL (a table lookup on
/// resident data; perflib's own name matching calls it in callbacks).
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn rtl_upcase_unicode_char(unit: u16) -> u16 {
    enter("RtlUpcaseUnicodeChar", DISPATCH_LEVEL);
    upcase(unit)
}

/// `void *memcpy(void *dest, const void *src, size_t count)`: any IRQL; overlapping ranges are a
/// violation (undefined behaviour in C; memmove is for that).
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn memcpy(destination: *mut u8, source: *const u8, count: usize) -> *mut u8 {
    let call = enter("memcpy", HIGH_LEVEL);
    let (d, s) = (destination as usize, source as usize);
    if count > 0 && d < s.wrapping_add(count) && s < d.wrapping_add(count) {
        call.violation(format!("overlapping ranges {d:#x} and {s:#x} ({count} bytes)"));
        // SAFETY: the driver's ranges, each valid for `count` bytes; copy handles the overlap.
        unsafe { std::ptr::copy(source, destination, count) };
    } else if count > 0 {
        // SAFETY: the driver's non-overlapping ranges, each valid for `count` bytes.
        unsafe { std::ptr::copy_nonoverlapping(source, destination, count) };
    }
    destination
}

/// `void *memset(void *dest, int c, size_t count)`: any IRQL.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn memset(destination: *mut u8, value: i32, count: usize) -> *mut u8 {
    enter("memset", HIGH_LEVEL);
    if count > 0 {
        // SAFETY: the driver's range, valid for `count` bytes.
        unsafe { std::ptr::write_bytes(destination, value as u8, count) };
    }
    destination
}

#[cfg(test)]
mod tests {
    use super::upcase;

    #[test]
    fn upcases_one_unit_at_a_time() {
        assert_eq!(upcase(u16::from(b'a')), u16::from(b'A'));
        assert_eq!(upcase(0xE9), 0xC9); // é
        assert_eq!(upcase(0xDF), 0xDF); // ß has no single-unit upper case
        assert_eq!(upcase(u16::from(b',')), u16::from(b','));
    }
}
