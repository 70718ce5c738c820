//! Host tests of the InstanceMask matcher: perflib's `*` and `?`, case folding, counted steps.

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
            (Some(&a), Some(&b)) => (a == QUESTION || a == b) && go(&mask[1..], &name[1..], calls, budget),
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
