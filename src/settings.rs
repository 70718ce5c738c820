//! The service's `Parameters` key as the driver reads it: a value as the platform hands it over
//! ([`Setting`]), why a value is not taken ([`Rejection`]), and the value-level parses every
//! parameter shares: a REG_DWORD within a range, a REG_SZ string, the lines of a REG_MULTI_SZ. What a
//! value means is its reader's: the event profile (`crate::pmu::profile`: `Profile`, `CustomEvents`)
//! and the collect-rate bound (`crate::session::throttle`: `MinimumCollectIntervalMs`).
//!
//! A value is read into a buffer of UTF-16 units whose first [`HEADER_UNITS`] units hold the header
//! ZwQueryValueKey writes before the data (KEY_VALUE_PARTIAL_INFORMATION: ULONG TitleIndex, ULONG
//! Type, ULONG DataLength, then the data; Microsoft Learn, "KEY_VALUE_PARTIAL_INFORMATION structure
//! (wdm.h)"); `src/kernel/registry.rs` ties these offsets to the structure at compile time. Pure: no
//! FFI, host-tested.
#![deny(unsafe_code)]

use core::ops::RangeInclusive;

/// Registry value types (winnt.h; Microsoft Learn, "Registry value types").
pub const REG_SZ: u32 = 1;
pub const REG_DWORD: u32 = 4;
pub const REG_MULTI_SZ: u32 = 7;

/// Where KEY_VALUE_PARTIAL_INFORMATION's `Type` is, in UTF-16 units from the buffer's start.
pub const TYPE_UNIT: usize = 2;
/// Where its `DataLength` (in bytes) is, in UTF-16 units.
pub const DATA_LENGTH_UNIT: usize = 4;
/// Units at the start of a value buffer that hold no data: the header, up to `Data`.
pub const HEADER_UNITS: usize = 6;

/// A registry value as the platform read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting<'a> {
    /// No such value (or no Parameters key).
    Missing,
    /// The value's registry type and data as UTF-16 units (registry strings are little-endian UTF-16;
    /// `odd` when the data had an odd number of bytes, which no string has).
    Value { kind: u32, units: &'a [u16], odd: bool },
    /// Longer than the buffer the driver reads it into.
    TooLong,
    /// Reading it failed with this NTSTATUS.
    Failed(i32),
}

/// Why a value, or a line of a REG_MULTI_SZ, was not taken, whatever the parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The value has the wrong registry type.
    WrongType { kind: u32 },
    /// The value is longer than the driver reads.
    TooLong,
    /// Reading the value failed.
    ReadFailed(i32),
    /// Not valid UTF-16, or not the size its type has.
    Malformed,
    /// A REG_DWORD outside the parameter's range.
    OutOfRange,
    /// A line after the empty string that ends a REG_MULTI_SZ list (Microsoft Learn, "Registry value
    /// types": the list ends at the first empty string): not part of the value, so not counted.
    AfterEndOfList,
}

/// The value ZwQueryValueKey left in `buffer` (a KEY_VALUE_PARTIAL_INFORMATION at its start): its
/// type and as much of its data as the buffer holds. A buffer shorter than the header reads as
/// [`Setting::TooLong`].
pub fn received(buffer: &[u16]) -> Setting<'_> {
    let Some(room) = buffer.get(HEADER_UNITS..) else { return Setting::TooLong };
    let ulong = |unit: usize| u32::from(buffer[unit]) | (u32::from(buffer[unit + 1]) << 16);
    let data_length = ulong(DATA_LENGTH_UNIT) as usize;
    let units = (data_length / 2).min(room.len());
    Setting::Value { kind: ulong(TYPE_UNIT), units: &room[..units], odd: !data_length.is_multiple_of(2) }
}

/// A REG_DWORD within `range`: `None` when missing (the caller's default), else the number or why it
/// was rejected.
pub fn dword(setting: Setting<'_>, range: RangeInclusive<u32>) -> Result<Option<u32>, Rejection> {
    match checked(setting, REG_DWORD)? {
        None => Ok(None),
        Some(&[low, high]) => {
            let value = u32::from(low) | (u32::from(high) << 16);
            if range.contains(&value) { Ok(Some(value)) } else { Err(Rejection::OutOfRange) }
        }
        Some(_) => Err(Rejection::Malformed),
    }
}

/// A REG_SZ's text without its terminators (`None` when missing).
pub fn string(setting: Setting<'_>) -> Result<Option<&[u16]>, Rejection> {
    Ok(checked(setting, REG_SZ)?.map(without_terminators))
}

/// A REG_MULTI_SZ's lines (none when missing). The registry stores a string value's data as its
/// writer sized it, terminators or not (The Old New Thing, 2004-08-24, on REG_SZ data without its
/// null); a value without them is read as if they were there, as RegGetValue returns strings
/// terminated (Microsoft Learn, "RegGetValueW function").
pub fn lines(setting: Setting<'_>) -> Result<Lines<'_>, Rejection> {
    let units = checked(setting, REG_MULTI_SZ)?.map_or(&[][..], without_terminators);
    Ok(Lines { units: Some(units), index: 0, ended: false })
}

/// The data of a value of registry type `kind`, with odd-sized data rejected (`None` when missing).
fn checked(setting: Setting<'_>, kind: u32) -> Result<Option<&[u16]>, Rejection> {
    match setting {
        Setting::Missing => Ok(None),
        Setting::TooLong => Err(Rejection::TooLong),
        Setting::Failed(status) => Err(Rejection::ReadFailed(status)),
        Setting::Value { kind: found, .. } if found != kind => Err(Rejection::WrongType { kind: found }),
        Setting::Value { odd: true, .. } => Err(Rejection::Malformed),
        Setting::Value { units, .. } => Ok(Some(units)),
    }
}

fn without_terminators(units: &[u16]) -> &[u16] {
    let end = units.iter().rposition(|&unit| unit != 0).map_or(0, |last| last + 1);
    &units[..end]
}

/// The lines of a REG_MULTI_SZ, each with its number from 0: every line before the empty string
/// that ends the list, then, if anything follows that string, one [`Rejection::AfterEndOfList`]
/// with the number of the first line after it, and nothing more.
pub struct Lines<'a> {
    /// What is left to read; `None` once the list is done.
    units: Option<&'a [u16]>,
    index: usize,
    /// The empty string that ends the list was read.
    ended: bool,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, Result<&'a [u16], Rejection>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let units = self.units?;
            let (line, rest) = match units.iter().position(|&unit| unit == 0) {
                Some(end) => (&units[..end], Some(&units[end + 1..])),
                None => (units, None),
            };
            self.units = rest;
            let index = self.index;
            self.index += 1;
            if line.is_empty() {
                self.ended = true;
            } else if self.ended {
                self.units = None;
                return Some((index, Err(Rejection::AfterEndOfList)));
            } else {
                return Some((index, Ok(line)));
            }
        }
    }
}

#[cfg(test)]
mod tests;
