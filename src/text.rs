//! Fixed-capacity, NUL-terminated text for kernel debug output, and ASCII constants in the UTF-16
//! the kernel's names take.
//!
//! Debug messages are formatted on the stack: the driver must be able to log (and to describe a panic)
//! at raised IRQL, where it may not allocate. Over-long messages are cut short and marked, never
//! dropped; they are cut between characters, so the text stays valid UTF-8; and an interior NUL in
//! formatted data cannot end the string early.

use core::ffi::CStr;
use core::fmt;

/// `ascii` as UTF-16 code units, at compile time: for the fixed names the kernel takes as
/// `UNICODE_STRING`s and PCW as instance names. Each ASCII byte is its own code unit.
pub const fn ascii_to_utf16<const N: usize>(ascii: &[u8; N]) -> [u16; N] {
    let mut units = [0; N];
    let mut index = 0;
    while index < N {
        assert!(ascii[index].is_ascii(), "ASCII text only");
        units[index] = ascii[index] as u16;
        index += 1;
    }
    units
}

/// What replaces the end of a message that did not fit.
const TRUNCATION_MARK: &[u8] = b"...";

/// A C string of at most `N - 1` bytes plus its terminating NUL, written through `core::fmt`.
pub struct FixedCString<const N: usize> {
    bytes: [u8; N],
    len: usize,
    truncated: bool,
}

impl<const N: usize> FixedCString<N> {
    const CAPACITY_CHECK: () = assert!(N > TRUNCATION_MARK.len() + 1, "buffer too small");

    pub const fn new() -> Self {
        let () = Self::CAPACITY_CHECK;
        Self { bytes: [0; N], len: 0, truncated: false }
    }

    /// True when something written did not fit; the text then ends in `...`.
    #[cfg(test)]
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The text without its terminator.
    #[cfg(test)]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The text as UTF-8. Writes store whole characters only, so this never fails in practice.
    #[cfg(test)]
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("<invalid UTF-8>")
    }

    /// The text as a C string. Always terminated: writes stop one byte short of the capacity.
    pub fn as_c_str(&self) -> &CStr {
        // The buffer starts zeroed, writes never store a NUL and never reach the last byte, so the first
        // NUL is at `len`.
        CStr::from_bytes_until_nul(&self.bytes[..=self.len]).unwrap_or(c"")
    }

    /// Ends the text with the truncation mark, overwriting whole characters at the end if needed.
    fn mark_truncated(&mut self) {
        self.truncated = true;
        let mut start = self.len.min(N - 1 - TRUNCATION_MARK.len());
        while start > 0 && is_utf8_continuation(self.bytes[start]) {
            start -= 1;
        }
        self.bytes[start..start + TRUNCATION_MARK.len()].copy_from_slice(TRUNCATION_MARK);
        self.len = start + TRUNCATION_MARK.len();
        self.bytes[self.len..].fill(0);
    }
}

impl<const N: usize> Default for FixedCString<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for FixedCString<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.truncated {
            return Ok(());
        }
        let text_room = N - 1;
        for character in s.chars() {
            // A NUL would end the C string early and hide the rest of the message.
            let character = if character == '\0' { '?' } else { character };
            let width = character.len_utf8();
            if self.len + width > text_room {
                self.mark_truncated();
                return Ok(());
            }
            character.encode_utf8(&mut self.bytes[self.len..self.len + width]);
            self.len += width;
        }
        Ok(())
    }
}

fn is_utf8_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn short_text_is_kept_whole_and_terminated() {
        let mut text = FixedCString::<16>::new();
        write!(text, "cpu {}", 7).unwrap();
        assert_eq!(text.as_bytes(), b"cpu 7");
        assert_eq!(text.as_c_str(), c"cpu 7");
        assert!(!text.is_truncated());
    }

    #[test]
    fn text_that_exactly_fills_the_buffer_is_not_truncated() {
        let mut text = FixedCString::<8>::new();
        text.write_str("1234567").unwrap();
        assert_eq!(text.as_c_str(), c"1234567");
        assert!(!text.is_truncated());
    }

    #[test]
    fn overlong_text_is_cut_and_marked() {
        let mut text = FixedCString::<8>::new();
        let long = "abcdefghijkl";
        write!(text, "{long}").unwrap();
        assert_eq!(text.as_c_str(), c"abcd...");
        assert!(text.is_truncated());
        // Later writes do not disturb a truncated message.
        text.write_str("more").unwrap();
        assert_eq!(text.as_c_str(), c"abcd...");
    }

    #[test]
    fn interior_nul_cannot_end_the_string_early() {
        let mut text = FixedCString::<16>::new();
        text.write_str("a\0b").unwrap();
        assert_eq!(text.as_c_str(), c"a?b");
    }

    #[test]
    fn truncation_never_splits_a_character() {
        // 'é' is two bytes: the cut and the mark must fall between characters.
        for capacity_text in ["ééééééééé", "aéééééééé", "€€€€€€", "a€€€€€€"]
        {
            let mut text = FixedCString::<10>::new();
            text.write_str(capacity_text).unwrap();
            assert!(text.is_truncated());
            assert!(core::str::from_utf8(text.as_bytes()).is_ok(), "{:?}", text.as_bytes());
            assert!(text.as_str().ends_with("..."));
            assert!(text.as_bytes().len() <= 9);
            assert_eq!(text.as_c_str().to_bytes(), text.as_bytes());
        }
    }

    #[test]
    fn multibyte_text_that_fits_is_kept() {
        let mut text = FixedCString::<8>::new();
        text.write_str("é€").unwrap();
        assert_eq!(text.as_str(), "é€");
        assert!(!text.is_truncated());
    }

    #[test]
    fn empty_text_is_an_empty_c_string() {
        let text = FixedCString::<8>::new();
        assert_eq!(text.as_c_str(), c"");
    }

    #[test]
    fn ascii_constants_are_their_utf16_encoding() {
        const NAME: [u16; 20] = ascii_to_utf16(b"\\Callback\\PowerState");
        assert_eq!(NAME.to_vec(), "\\Callback\\PowerState".encode_utf16().collect::<Vec<_>>());
        assert_eq!(ascii_to_utf16(b""), [0u16; 0]);
    }
}
