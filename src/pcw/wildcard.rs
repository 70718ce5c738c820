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
//! the way the rest of Windows compares them; [`ascii_upcase`] is a ready default, and the host tests
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(text: &str) -> Vec<u16> {
        text.encode_utf16().collect()
    }

    /// A Unicode-aware stand-in for `RtlUpcaseUnicodeChar`: a code unit maps to the upper case of its
    /// character when that is a single BMP character, and to itself otherwise (surrogates, 'ß' -> "SS").
    fn unicode_upcase(unit: u16) -> u16 {
        let Some(c) = char::from_u32(u32::from(unit)) else { return unit };
        let mut upper = c.to_uppercase();
        match (upper.next(), upper.next()) {
            (Some(u), None) => u16::try_from(u32::from(u)).unwrap_or(unit),
            _ => unit,
        }
    }

    fn m(mask: &str, name: &str) -> bool {
        let result = matches(&w(mask), &w(name), unicode_upcase);
        assert_eq!(result, reference(&w(mask), &w(name), unicode_upcase), "{mask:?} vs {name:?}");
        result
    }

    fn bound(mask: &[u16], name: &[u16]) -> usize {
        (mask.len() + 1) * (name.len() + 1)
    }

    /// Obviously correct reference: `table[i][j]` is whether `mask[..i]` matches `name[..j]`.
    fn reference(mask: &[u16], name: &[u16], upcase: impl Fn(u16) -> u16) -> bool {
        let mut table = vec![vec![false; name.len() + 1]; mask.len() + 1];
        table[0][0] = true;
        for i in 1..=mask.len() {
            for j in 0..=name.len() {
                table[i][j] = match mask[i - 1] {
                    STAR => table[i - 1][j] || (j > 0 && table[i][j - 1]),
                    QUESTION => j > 0 && table[i - 1][j - 1],
                    unit => j > 0 && table[i - 1][j - 1] && upcase(unit) == upcase(name[j - 1]),
                };
            }
        }
        table[mask.len()][name.len()]
    }

    /// The naive backtracking matcher, counting its calls and giving up once `budget` is exceeded.
    /// Returns the number of calls made (more than `budget` when it gave up).
    fn naive_calls(mask: &[u16], name: &[u16], budget: usize) -> usize {
        fn go(mask: &[u16], name: &[u16], calls: &mut usize, budget: usize) -> bool {
            *calls += 1;
            if *calls > budget {
                return false;
            }
            match (mask.first(), name.first()) {
                (None, _) => name.is_empty(),
                (Some(&STAR), _) => {
                    go(&mask[1..], name, calls, budget)
                        || (!name.is_empty() && go(mask, &name[1..], calls, budget))
                }
                (Some(_), None) => false,
                (Some(&a), Some(&b)) => {
                    (a == QUESTION || a == b) && go(&mask[1..], &name[1..], calls, budget)
                }
            }
        }
        let mut calls = 0;
        go(mask, name, &mut calls, budget);
        calls
    }

    #[test]
    fn exact_and_case_insensitive() {
        assert!(m("0,5", "0,5"));
        assert!(!m("0,5", "0,6"));
        assert!(!m("0,5", "0,55"));
        assert!(m("_total", "_Total"));
        assert!(m("_TOTAL", "_total"));
        assert!(matches(&w("_tOtAl"), &w("_Total"), ascii_upcase));
        assert!(matches(&w("_Total"), &w("_Total"), |u| u));
        assert!(!matches(&w("_total"), &w("_Total"), |u| u), "identity folding is case-sensitive");
    }

    #[test]
    fn question_mark() {
        assert!(!m("?", ""));
        assert!(m("?", "x"));
        assert!(!m("??", "x"));
        assert!(!m("a?", "a"));
        assert!(m("0,?", "0,5"));
        assert!(!m("0,?", "0,15"));
        assert!(m("0,??", "0,15"));
        assert!(m("?,?", "1,2"));
        // `?` is one code unit: a character outside the BMP takes two.
        assert!(!m("?", "\u{1F600}"));
        assert!(m("??", "\u{1F600}"));
    }

    #[test]
    fn star_positions() {
        assert!(m("*,5", "0,5"));
        assert!(m("*,5", ",5"));
        assert!(!m("*,5", "0,15x"));
        assert!(m("0,*", "0,17"));
        assert!(m("0,*", "0,"));
        assert!(!m("0,*", "1,0"));
        assert!(m("0*5", "0,5"));
        assert!(m("0*5", "05"));
        assert!(m("0*5", "0,1,5"));
        assert!(!m("0*5", "0,51"));
        assert!(m("*5*", "0,5"));
        assert!(m("*_*l", "_Total"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c*", "xxcxxbxxaxx"));
        assert!(m("**a**", "a"));
        assert!(m("*?", "x"));
        assert!(!m("*??", "x"));
        assert!(m("a*b*a", "abba"));
        assert!(m("*ab", "aab"));
        assert!(m("*aab", "aaab"), "the backtrack must retry inside a partial match");
    }

    #[test]
    fn mask_longer_than_name() {
        assert!(!m("0,5x", "0,5"));
        assert!(!m("0,50", "0,5"));
        assert!(m("0,5**", "0,5"));
        assert!(!m("0,5*?", "0,5"));
    }

    #[test]
    fn empty_mask_and_empty_name() {
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(!m("", "0,5"));
        assert!(m("*", ""));
        assert!(m("**", ""));
        assert!(!m("?", ""));
        assert!(!m("a", ""));
        assert!(!m("*?", ""));
        assert!(!m("*a", ""));
    }

    #[test]
    fn star_matches_everything() {
        for name in ["", "0,5", "_Total", "*", "?", "\u{e9}\u{1F600}", "a\u{0}b"] {
            assert!(m("*", name), "{name:?}");
        }
        let garbage: Vec<u16> = (0..=u16::MAX).collect();
        assert_eq!(matches_counting(&w("*"), &garbage, ascii_upcase), (true, 1), "the mask `*` is O(1)");
        assert_eq!(matches_counting(&w("*"), &[], ascii_upcase), (true, 1));
    }

    #[test]
    fn absent_mask_matches_everything() {
        assert!(matches_optional(None, &w("0,5"), ascii_upcase));
        assert!(matches_optional(None, &[], ascii_upcase));
        assert!(matches_optional(Some(&w("0,*")), &w("0,5"), ascii_upcase));
        assert!(!matches_optional(Some(&w("1,*")), &w("0,5"), ascii_upcase));
        assert!(!matches_optional(Some(&[]), &w("0,5"), ascii_upcase), "empty is not absent");
    }

    #[test]
    fn non_ascii_literals() {
        assert!(m("caf\u{e9}", "CAF\u{c9}"));
        assert!(m("*\u{c9}", "caf\u{e9}"));
        assert!(m("\u{3c3}*", "\u{3a3}\u{3a3}"), "sigma");
        assert!(!m("caf\u{e9}", "cafe"));
        // ASCII folding leaves them alone: exact code units still match, other cases do not.
        assert!(matches(&w("caf\u{e9}"), &w("CAF\u{e9}"), ascii_upcase));
        assert!(!matches(&w("caf\u{e9}"), &w("CAF\u{c9}"), ascii_upcase));
        // Unpaired surrogates are just code units.
        assert!(matches(&[0xD800, STAR], &[0xD800, 0xDC00, 0xDFFF], unicode_upcase));
        assert!(!matches(&[0xDC00], &[0xD800], unicode_upcase));
    }

    #[test]
    fn odd_byte_lengths() {
        let expected = [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3)];
        for (bytes, units) in expected {
            assert_eq!(code_units_from_byte_length(bytes), units, "{bytes} bytes");
        }
        assert_eq!(code_units_from_byte_length(u16::MAX), 32767);
        assert_eq!(code_units_from_byte_length(u16::MAX - 1), 32767);
        // "0,5" plus garbage, with an odd length that ends halfway into the garbage.
        let buffer = w("0,5Z");
        let mask = &buffer[..code_units_from_byte_length(7)];
        assert!(matches(mask, &w("0,5"), ascii_upcase));
        assert!(!matches(mask, &w("0,5Z"), ascii_upcase));
    }

    #[test]
    fn pathological_masks_stay_polynomial() {
        let aaaa = |len: usize| vec![u16::from(b'a'); len];
        let many_stars: String = "*a".repeat(1000) + "b";
        let many_stars_open: String = "*a".repeat(1000);
        let long_literal = format!("*{}b", "a".repeat(30));
        let cases: [(&str, bool); 7] = [
            ("*a*a*a*a*a*a*a*a*b", false),
            ("*a*a*a*a*a*a*a*a*a", true),
            ("*a*a*a*a*b", false),
            ("?*?*?*?*x", false),
            ("*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*b", false),
            (&many_stars, false),
            (&long_literal, false),
        ];
        // Short names first, so that a backtracking matcher fails the bound here instead of hanging on
        // the long ones.
        for len in [12, 40, 2000] {
            for (mask, expected) in cases {
                let (mask, name) = (w(mask), aaaa(len));
                let (result, steps) = matches_counting(&mask, &name, ascii_upcase);
                assert_eq!(
                    result,
                    reference(&mask, &name, ascii_upcase),
                    "mask of {} units vs a^{len}",
                    mask.len()
                );
                if len == 2000 {
                    assert_eq!(result, expected, "mask of {} units vs a^{len}", mask.len());
                }
                assert!(steps <= bound(&mask, &name), "{steps} steps for {} x {len}", mask.len());
            }
        }
        let (mask, name) = (w(&many_stars_open), aaaa(2000));
        let (result, steps) = matches_counting(&mask, &name, ascii_upcase);
        assert!(result);
        assert!(steps <= bound(&mask, &name));
    }

    /// The step bound in `pathological_masks_stay_polynomial` does catch a backtracking matcher: the
    /// naive recursive one blows through it on a much smaller instance of the same pattern.
    #[test]
    fn step_bound_rejects_exponential_matcher() {
        let mask = w("*a*a*a*a*a*a*a*a*b");
        let name = vec![u16::from(b'a'); 40];
        let limit = bound(&mask, &name);
        assert!(naive_calls(&mask, &name, 100 * limit) > 100 * limit);
        assert!(matches_counting(&mask, &name, ascii_upcase).1 <= limit);
        // And the counting itself is honest: the naive matcher is within it on an easy input.
        assert!(naive_calls(&w("0,5"), &w("0,5"), limit) <= limit);
    }

    /// Masks and names over a small alphabet where wildcards, case and a non-ASCII letter all matter.
    fn unit() -> impl Strategy<Value = u16> {
        prop::sample::select(w("*?aAbB\u{e9}\u{c9},0"))
    }

    fn name_unit() -> impl Strategy<Value = u16> {
        prop::sample::select(w("aAbB\u{e9}\u{c9},0*?"))
    }

    /// A name built to match `mask`: each `*` becomes 0..3 random units, each `?` one random unit, and
    /// each literal itself in either case.
    fn matching_pair() -> impl Strategy<Value = (Vec<u16>, Vec<u16>)> {
        prop::collection::vec(unit(), 0..12).prop_flat_map(|mask| {
            let parts: Vec<BoxedStrategy<Vec<u16>>> = mask
                .iter()
                .map(|&unit| match unit {
                    STAR => prop::collection::vec(name_unit(), 0..4).boxed(),
                    QUESTION => prop::collection::vec(name_unit(), 1).boxed(),
                    literal => {
                        let cases = vec![unicode_upcase(literal), char_lower(literal)];
                        prop::sample::select(cases).prop_map(|u| vec![u]).boxed()
                    }
                })
                .collect();
            (Just(mask), parts).prop_map(|(mask, parts)| (mask, parts.concat()))
        })
    }

    fn char_lower(unit: u16) -> u16 {
        let c = char::from_u32(u32::from(unit)).unwrap();
        u16::try_from(u32::from(c.to_lowercase().next().unwrap())).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn agrees_with_reference(
            mask in prop::collection::vec(unit(), 0..10),
            name in prop::collection::vec(name_unit(), 0..12),
        ) {
            let (result, steps) = matches_counting(&mask, &name, unicode_upcase);
            prop_assert_eq!(result, reference(&mask, &name, unicode_upcase));
            prop_assert_eq!(matches(&mask, &name, ascii_upcase), reference(&mask, &name, ascii_upcase));
            prop_assert!(steps <= bound(&mask, &name));
        }

        #[test]
        fn constructed_matches_are_found((mask, name) in matching_pair()) {
            prop_assert!(reference(&mask, &name, unicode_upcase));
            let (result, steps) = matches_counting(&mask, &name, unicode_upcase);
            prop_assert!(result);
            prop_assert!(steps <= bound(&mask, &name));
        }

        #[test]
        fn longer_inputs_stay_within_bound(
            mask in prop::collection::vec(unit(), 0..40),
            name in prop::collection::vec(name_unit(), 0..120),
        ) {
            let (result, steps) = matches_counting(&mask, &name, unicode_upcase);
            prop_assert_eq!(result, reference(&mask, &name, unicode_upcase));
            prop_assert!(steps <= bound(&mask, &name), "{} > {}", steps, bound(&mask, &name));
        }

        #[test]
        fn odd_byte_length_truncates_to_whole_units(
            mask in prop::collection::vec(unit(), 0..10),
            garbage in prop::collection::vec(any::<u16>(), 0..4),
            odd in 0u16..2,
            name in prop::collection::vec(name_unit(), 0..12),
        ) {
            let mut buffer = mask.clone();
            buffer.extend_from_slice(&garbage);
            let byte_len = u16::try_from(mask.len() * 2).unwrap() + odd;
            let units = code_units_from_byte_length(byte_len);
            prop_assert_eq!(units, mask.len());
            prop_assert_eq!(
                matches_counting(&buffer[..units], &name, unicode_upcase),
                matches_counting(&mask, &name, unicode_upcase)
            );
        }
    }
}
