//! Matching instance names against a PCW consumer's `InstanceMask`.
//!
//! perflib hands the provider callback (`PCW_MASK_INFORMATION::InstanceMask`) a wildcard specification
//! of the instance names the consumer wants: `*` matches any run of characters (the empty run
//! included), `?` matches exactly one character, and every other character matches itself, ignoring
//! case. "Everything" arrives as the mask `*`.
//!
//! The mask is untrusted input examined in the kernel, so this module is written for that:
//! - it works on `&[u16]` slices only (the conversion of the `UNICODE_STRING` pointer to a slice is the
//!   kernel boundary's job), with only `core`, no allocation and constant stack depth;
//! - a "character" is one UTF-16 code unit, as for perflib's `WCHAR` strings: `?` matches one code unit,
//!   so half of a surrogate pair; unpaired surrogates and any other garbage simply match themselves;
//! - the time is at most `(|mask| + 1) * (|name| + 1)` steps whatever the input (see
//!   [`matches_counting`]): no recursion and no exponential backtracking;
//! - it never panics: every index is checked with `get`.
//!
//! Case folding is a parameter: the driver passes the kernel's `RtlUpcaseUnicodeChar`, so names compare
//! the way the rest of Windows compares them; `ascii_upcase` (in the tests) is a ready default, and the host tests
//! pass a Unicode-aware reference.

/// Matches any run of characters, the empty run included.
const STAR: u16 = b'*' as u16;
/// Matches exactly one character (UTF-16 code unit).
const QUESTION: u16 = b'?' as u16;

/// The number of whole UTF-16 code units in a `UNICODE_STRING` whose `Length` is `byte_len` bytes.
///
/// `Length` counts bytes, and nothing stops a malformed string from giving an odd count. An odd
/// trailing byte is half a code unit: it is ignored (the string is read as `byte_len / 2` units, the
/// usual `Length / sizeof(WCHAR)`), so nothing past the `Length` the caller vouched for is ever read.
pub const fn code_units_from_byte_length(byte_len: u16) -> usize {
    (byte_len / 2) as usize
}

/// Upper-cases the ASCII letters `a`..=`z` and leaves every other code unit unchanged.
///
/// Enough for this driver's own instance names ("0,5", "_Total"); the kernel build passes
/// `RtlUpcaseUnicodeChar` instead so that non-ASCII masks compare as elsewhere in Windows.
#[cfg(test)]
pub const fn ascii_upcase(unit: u16) -> u16 {
    if matches!(unit, 0x61..=0x7A) { unit - 0x20 } else { unit }
}

/// True when `name` matches the wildcard `mask`; letters compare equal when `upcase` maps them to the
/// same code unit.
///
/// An empty mask matches only the empty name; the mask `*` matches every name. Takes at most
/// `(|mask| + 1) * (|name| + 1)` steps, each one or two `upcase` calls (see [`matches_counting`]).
pub fn matches(mask: &[u16], name: &[u16], upcase: impl Fn(u16) -> u16) -> bool {
    matches_counting(mask, name, upcase).0
}

/// [`matches()`] for a mask that may be absent: `None` (a NULL `PCUNICODE_STRING`) matches every name, by
/// this driver's choice, exactly like the mask `*`. A present but empty mask is an ordinary mask and
/// matches only the empty name.
pub fn matches_optional(mask: Option<&[u16]>, name: &[u16], upcase: impl Fn(u16) -> u16) -> bool {
    match mask {
        None => true,
        Some(mask) => matches(mask, name, upcase),
    }
}

/// [`matches()`], also returning the number of steps taken. Public, but hidden, so that the benchmark
/// can show the cost; [`matches()`] is this with the count dropped (and optimised away).
///
/// The algorithm is the linear-space greedy one with a single backtrack point. The mask and the name
/// are walked together; each `*` met records a resume point (the position just after it in the mask,
/// and the position in the name where its run currently ends, starting with the empty run). When a
/// literal or `?` fails to match, the run of the most recent `*` grows by one character and matching
/// resumes right after that `*`; with no `*` seen, the match fails. Earlier `*`s are never revisited:
/// whatever a longer run of an earlier `*` could achieve, the later `*` can achieve by absorbing the
/// same characters, so the most recent one is the only backtrack point needed.
///
/// Bound: one step is one iteration of either loop. Every step either advances the mask position, or
/// is a backtrack, or fails the match. The name position where the most recent `*`'s run ends never
/// decreases (a new `*` is recorded at the current name position, which is at or beyond it) and each
/// backtrack increases it by one, to at most `|name|`, so there are at most `|name|` backtracks. Between
/// two backtracks (and after the last one, counting the trailing-`*` loop) the mask position only
/// grows, so such a stretch takes at most `|mask|` steps. A failure happens only when no `*` was seen,
/// hence after no backtrack. In all: at most `(|name| + 1) * |mask| + |name| + 1 =
/// (|mask| + 1) * (|name| + 1)` steps: O(|mask| * |name|) time, O(1) space, no recursion.
#[doc(hidden)]
pub fn matches_counting(mask: &[u16], name: &[u16], upcase: impl Fn(u16) -> u16) -> (bool, usize) {
    let same =
        |mask_unit: u16, name_unit: u16| mask_unit == name_unit || upcase(mask_unit) == upcase(name_unit);
    let mut steps: usize = 0;
    let (mut m, mut n) = (0, 0);
    // The backtrack point: the mask position just after the most recent `*`, and the name position
    // where that `*`'s run ends.
    let mut resume: Option<(usize, usize)> = None;

    while let Some(&name_unit) = name.get(n) {
        steps = steps.saturating_add(1);
        match mask.get(m) {
            Some(&STAR) => {
                m += 1;
                if m == mask.len() {
                    // A trailing `*` takes whatever is left of the name.
                    return (true, steps);
                }
                resume = Some((m, n));
            }
            Some(&mask_unit) if mask_unit == QUESTION || same(mask_unit, name_unit) => {
                m += 1;
                n += 1;
            }
            // A mismatch, or the mask ran out before the name: lengthen the most recent `*`'s run.
            _ => match resume {
                Some((after_star, run_end)) => {
                    resume = Some((after_star, run_end + 1));
                    m = after_star;
                    n = run_end + 1;
                }
                None => return (false, steps),
            },
        }
    }
    // The name is used up: what is left of the mask must be able to match nothing, i.e. be all `*`.
    while mask.get(m) == Some(&STAR) {
        steps = steps.saturating_add(1);
        m += 1;
    }
    (m == mask.len(), steps)
}

#[cfg(test)]
mod tests;
