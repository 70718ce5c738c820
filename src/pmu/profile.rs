//! Event profiles: what the general-purpose counters count, chosen by the service's `Parameters` key.
//!
//! * `Profile` (REG_SZ): `default` (the published events), `topdown` (with the top-down inputs, where
//!   IA32_PERF_METRICS is absent) or `custom`. Missing: `default`; anything else: `default`, rejected.
//! * `CustomEvents` (REG_MULTI_SZ, `custom` only): one raw event per string, comma-separated
//!   `key=value` pairs such as `event=0xC4,umask=0x00,name=branches` (decimal or `0x` numbers):
//!   `event` (required; 8 bits on Intel, 12 on AMD), `umask`, `cmask` (0-255), `inv`, `edge` (0/1,
//!   default 0), `usr`, `os` (0/1, default 1, not both 0: perf's `:u`/`:k`), `counters` (the
//!   general-purpose counters the event may use: numbers 0-7 and ranges joined by `+`), `core`
//!   (`performance` or `efficient`: on a hybrid processor, the one core type that counts it; on a
//!   hybrid processor a line naming no core type must be an Intel architectural event), `name` (up to
//!   32 characters, for the debug output). No other key is taken, so no line can set a reserved
//!   event-select bit (a #GP: Intel SDM Vol. 3B "IA32_PERFEVTSELx MSRs", AMD APM Vol. 2
//!   "PerfEvtSeln"); AMD events that need a merged counter pair are refused.
//!
//! The list ends at its first empty string, as REG_MULTI_SZ does (its lines: `crate::settings`). Line
//! *i* (from 0) counts as "Custom Event *i*"; a rejected line is counted and explained, its Custom
//! Event reads 0, and the others keep their numbers and work. Lines the counters left after
//! instructions and cycles cannot hold are planned, find no counter and read 0 (the plan's dropped set).

use super::encoding::Encoding;
use super::events::{CUSTOM_EVENTS, Event, IntelEncoding};
use super::hybrid::CoreType;
use super::model::Vendor;
use crate::settings::{self, Setting};
use core::fmt;

/// The longest `CustomEvents` value read, in bytes (UTF-16, terminators included); longer values are
/// rejected whole.
pub const MAX_CUSTOM_EVENTS_BYTES: usize = 2048;
/// The longest `Profile` value read, in bytes.
pub const MAX_PROFILE_BYTES: usize = 64;
/// The longest `name`, in characters.
const MAX_NAME: usize = 32;

/// Which events the general-purpose counters count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub enum Profile {
    #[default]
    Default = 0,
    Topdown = 1,
    Custom = 2,
}

/// Why a value or a line was not taken.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Refused as a registry value, whatever it says: wrong type, too long, unreadable, malformed,
    /// after the end of the list.
    Value(settings::Rejection),
    /// `Profile` names no profile.
    UnknownProfile,
    /// A line has no `event=`.
    MissingEvent,
    /// A line names a key the driver does not take.
    UnknownKey,
    /// A key appears twice in a line.
    DuplicateKey,
    /// A value is not a number, or out of the key's range on this vendor.
    OutOfRange,
    /// More lines than [`CUSTOM_EVENTS`].
    TooManyEvents,
    /// `usr=0` and `os=0`: the event would count nothing.
    CountsNothing,
    /// An AMD event that needs a pair of counters: the Merge event (FFFH), or one that can count more
    /// than 15 per cycle and gives no useful count without it (003H, retired SSE/AVX FLOPs; AMD's
    /// PPRs for families 17h and 19h, "Large Increment per Cycle Events"; Linux
    /// `amd_is_pair_event_code`). Counting it alone would publish a wrong number.
    NeedsCounterPair,
    /// On a hybrid processor, a model-specific event (not one of Intel's architectural events) with no
    /// `core=`: its encoding means one thing on the performance cores and another, or nothing, on the
    /// efficient cores (their event lists differ: intel/perfmon's per-core-type JSON files).
    ModelSpecificNeedsCore,
}

impl From<settings::Rejection> for Rejection {
    fn from(why: settings::Rejection) -> Self {
        Rejection::Value(why)
    }
}

/// As the debug output names it: a value's rejection by its own name (`TooLong`, not `Value(TooLong)`).
impl fmt::Debug for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rejection::Value(why) => return why.fmt(f),
            Rejection::UnknownProfile => "UnknownProfile",
            Rejection::MissingEvent => "MissingEvent",
            Rejection::UnknownKey => "UnknownKey",
            Rejection::DuplicateKey => "DuplicateKey",
            Rejection::OutOfRange => "OutOfRange",
            Rejection::TooManyEvents => "TooManyEvents",
            Rejection::CountsNothing => "CountsNothing",
            Rejection::NeedsCounterPair => "NeedsCounterPair",
            Rejection::ModelSpecificNeedsCore => "ModelSpecificNeedsCore",
        })
    }
}

/// What the `Parameters` key selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    pub profile: Profile,
    /// The accepted custom events, in order (`custom` profile only).
    pub custom: [Option<Encoding>; CUSTOM_EVENTS],
    /// Values and lines rejected.
    pub rejected: u32,
}

impl Default for Selection {
    fn default() -> Self {
        Selection { profile: Profile::Default, custom: [None; CUSTOM_EVENTS], rejected: 0 }
    }
}

impl Selection {
    /// The event select value of each custom line as the driver programs it on a `vendor` processor,
    /// without the interrupt bit (which depends on the counter a line gets): what the status
    /// counterset's Custom Event n Select counters publish. 0 for a line absent or rejected, and for
    /// every line outside the `custom` profile.
    pub fn custom_selects(&self, vendor: Vendor) -> [u64; CUSTOM_EVENTS] {
        self.custom
            .map(|line| line.map_or(0, |encoding| super::encoding::evtsel_for(vendor, encoding, false)))
    }
}

/// Reads the `Profile` and (for `custom`) `CustomEvents` values for a `vendor` processor, calling
/// `explain` for every rejection (line number from 1 for `CustomEvents` lines, 0 for a whole value).
pub fn select(
    vendor: Vendor,
    hybrid: bool,
    profile: Setting<'_>,
    custom_events: Setting<'_>,
    mut explain: impl FnMut(&'static str, usize, Rejection),
) -> Selection {
    let mut selection = Selection::default();
    let mut reject = |value, line, why| {
        selection.rejected += 1;
        explain(value, line, why);
    };
    selection.profile = match settings::string(profile) {
        Ok(None) => Profile::Default,
        Ok(Some(units)) => match parse_profile(units) {
            Some(profile) => profile,
            None => {
                reject("Profile", 0, Rejection::UnknownProfile);
                Profile::Default
            }
        },
        Err(why) => {
            reject("Profile", 0, why.into());
            Profile::Default
        }
    };
    if selection.profile != Profile::Custom {
        return selection;
    }
    let lines = match settings::lines(custom_events) {
        Ok(lines) => Some(lines),
        Err(why) => {
            reject("CustomEvents", 0, why.into());
            None
        }
    };
    for (index, line) in lines.into_iter().flatten() {
        // Line n (from 0) is Custom Event n, whether the lines before it were taken or not.
        let why = match (line, selection.custom.get_mut(index)) {
            (Err(why), _) => why.into(),
            (Ok(_), None) => Rejection::TooManyEvents,
            (Ok(line), Some(custom)) => match parse_event(line, vendor, hybrid) {
                Ok(encoding) => {
                    *custom = Some(encoding);
                    continue;
                }
                Err(why) => why,
            },
        };
        reject("CustomEvents", index + 1, why);
    }
    selection
}

/// `default`, `topdown` or `custom`, in any case, with surrounding spaces.
fn parse_profile(units: &[u16]) -> Option<Profile> {
    let units = trim(units);
    [("default", Profile::Default), ("topdown", Profile::Topdown), ("custom", Profile::Custom)]
        .into_iter()
        .find(|(name, _)| eq_ignore_ascii_case(units, name))
        .map(|(_, profile)| profile)
}

fn trim(mut units: &[u16]) -> &[u16] {
    while let [first, rest @ ..] = units
        && (*first == u16::from(b' ') || *first == u16::from(b'\t'))
    {
        units = rest;
    }
    while let [rest @ .., last] = units
        && (*last == u16::from(b' ') || *last == u16::from(b'\t'))
    {
        units = rest;
    }
    units
}

fn eq_ignore_ascii_case(units: &[u16], text: &str) -> bool {
    units.len() == text.len()
        && units
            .iter()
            .zip(text.bytes())
            .all(|(&unit, byte)| u8::try_from(unit).is_ok_and(|unit| unit.eq_ignore_ascii_case(&byte)))
}

/// The keys a `CustomEvents` line may name.
const KEYS: [&str; 10] = ["event", "umask", "cmask", "inv", "edge", "name", "usr", "os", "counters", "core"];

/// One `CustomEvents` line, for a `hybrid` processor or not.
fn parse_event(line: &[u16], vendor: Vendor, hybrid: bool) -> Result<Encoding, Rejection> {
    let event_bits = match vendor {
        Vendor::Intel => 8,
        Vendor::Amd => 12,
    };
    let mut seen = [false; KEYS.len()];
    let mut encoding = Encoding::new(0, 0);
    for pair in line.split(|&unit| unit == u16::from(b',')) {
        let pair = trim(pair);
        let Some(equals) = pair.iter().position(|&unit| unit == u16::from(b'=')) else {
            return Err(Rejection::UnknownKey);
        };
        let (key, value) = (trim(&pair[..equals]), trim(&pair[equals + 1..]));
        let Some(index) = KEYS.iter().position(|name| eq_ignore_ascii_case(key, name)) else {
            return Err(Rejection::UnknownKey);
        };
        if core::mem::replace(&mut seen[index], true) {
            return Err(Rejection::DuplicateKey);
        }
        match KEYS[index] {
            "event" => encoding.event = number(value, (1 << event_bits) - 1)? as u16,
            "umask" => encoding.umask = number(value, 0xFF)? as u8,
            "cmask" => encoding.cmask = number(value, 0xFF)? as u8,
            "inv" => encoding.inv = number(value, 1)? == 1,
            "edge" => encoding.edge = number(value, 1)? == 1,
            "usr" => encoding.usr = number(value, 1)? == 1,
            "os" => encoding.os = number(value, 1)? == 1,
            "counters" => encoding.counters = counters(value)?,
            "core" => encoding.core_types = core_type(value)?,
            _ if value.len() > MAX_NAME || value.is_empty() => return Err(Rejection::OutOfRange),
            _ => {}
        }
    }
    if !seen[0] {
        return Err(Rejection::MissingEvent);
    }
    if !encoding.usr && !encoding.os {
        return Err(Rejection::CountsNothing);
    }
    if vendor == Vendor::Amd && matches!(encoding.event, AMD_MERGE_EVENT | AMD_RETIRED_SSE_AVX_FLOPS) {
        return Err(Rejection::NeedsCounterPair);
    }
    if hybrid && !seen[9] && !intel_architectural(&encoding) {
        return Err(Rejection::ModelSpecificNeedsCore);
    }
    Ok(encoding)
}

/// A `core=` value: `performance` or `efficient` (any case), as an [`Encoding::core_types`] bit.
fn core_type(units: &[u16]) -> Result<u8, Rejection> {
    [("performance", CoreType::Performance), ("efficient", CoreType::Efficient)]
        .into_iter()
        .find(|(name, _)| eq_ignore_ascii_case(units, name))
        .map(|(_, core_type)| 1 << core_type as u8)
        .ok_or(Rejection::OutOfRange)
}

/// Whether `encoding`'s event and unit mask are one of Intel's architectural events, which every
/// core type counts alike (Intel SDM Vol. 3B, "Pre-defined Architectural Performance Events").
fn intel_architectural(encoding: &Encoding) -> bool {
    Event::ALL.iter().any(|event| match event.info().intel {
        IntelEncoding::Architectural { encoding: architectural, .. } => {
            (architectural.event, architectural.umask) == (encoding.event, encoding.umask)
        }
        _ => false,
    })
}

/// AMD PMCxFFF, the Merge event that joins a counter to its even neighbour.
const AMD_MERGE_EVENT: u16 = 0xFFF;
/// AMD PMCx003, retired SSE/AVX FLOPs: up to 64 per cycle, counted only with a merged pair.
const AMD_RETIRED_SSE_AVX_FLOPS: u16 = 0x003;

/// A `counters=` value: general-purpose counter numbers (0-7) and ranges `a-b`, joined by `+` (a
/// comma would end the key), for example `0-3` or `0+2`, as a mask with bit i for counter i. Intel's
/// event lists write the same restriction as `"Counter": "0,1,2,3"`.
fn counters(units: &[u16]) -> Result<u8, Rejection> {
    let mut mask = 0u8;
    for part in units.split(|&unit| unit == u16::from(b'+')) {
        let part = trim(part);
        let (first, last) = match part.iter().position(|&unit| unit == u16::from(b'-')) {
            Some(dash) => (number(trim(&part[..dash]), 7)?, number(trim(&part[dash + 1..]), 7)?),
            None => (number(part, 7)?, number(part, 7)?),
        };
        if first > last {
            return Err(Rejection::OutOfRange);
        }
        mask |= ((1u16 << (last + 1)) - (1u16 << first)) as u8;
    }
    Ok(mask)
}

/// A decimal or `0x` hexadecimal number no greater than `max`.
fn number(units: &[u16], max: u32) -> Result<u32, Rejection> {
    let (digits, radix) = match units {
        [zero, x, rest @ ..]
            if *zero == u16::from(b'0') && (*x == u16::from(b'x') || *x == u16::from(b'X')) =>
        {
            (rest, 16)
        }
        _ => (units, 10),
    };
    if digits.is_empty() {
        return Err(Rejection::OutOfRange);
    }
    let mut value: u32 = 0;
    for &unit in digits {
        let digit =
            char::from_u32(u32::from(unit)).and_then(|c| c.to_digit(radix)).ok_or(Rejection::OutOfRange)?;
        value = value.checked_mul(radix).and_then(|v| v.checked_add(digit)).ok_or(Rejection::OutOfRange)?;
    }
    if value > max { Err(Rejection::OutOfRange) } else { Ok(value) }
}

#[cfg(test)]
mod tests;
