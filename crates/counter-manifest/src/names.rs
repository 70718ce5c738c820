//! Identifier checks and case conversions for the names the manifest's symbols become in Rust.

/// Whether `s` is a C identifier (`[A-Za-z_][A-Za-z0-9_]*`), the schema's `CSymbolType`.
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The words of a C identifier: split at underscores, at a lower-case letter or digit followed by an
/// upper-case letter (`LlcMisses` → `Llc`, `Misses`), and before the last capital of a run of capitals
/// followed by a lower-case letter (`PMUState` → `PMU`, `State`).
fn words(symbol: &str) -> Vec<String> {
    let chars: Vec<char> = symbol.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !current.is_empty() {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_is_lower)
            {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// `snake_case` of a C identifier: `InstructionsRetired` → `instructions_retired`.
pub fn snake_case(symbol: &str) -> String {
    words(symbol).iter().map(|w| w.to_ascii_lowercase()).collect::<Vec<_>>().join("_")
}

/// `SCREAMING_SNAKE_CASE` of a C identifier: `InstructionsPerSec` → `INSTRUCTIONS_PER_SEC`.
pub fn screaming_snake_case(symbol: &str) -> String {
    words(symbol).iter().map(|w| w.to_ascii_uppercase()).collect::<Vec<_>>().join("_")
}

/// The Rust constant a counter without `symbol` gets from its name (a counter without name either gets
/// its `field`'s, [`screaming_snake_case`]): the name's words in SCREAMING_SNAKE_CASE, with `%` read as
/// the word PERCENT, `/` as PER and `#` as NUMBER. Any other character that is not an ASCII letter or
/// digit separates words (letters outside ASCII included), and a run of letters and digits splits
/// further as a C identifier does:
///
/// ```
/// use counter_manifest::counter_constant;
/// assert_eq!(counter_constant("% Duty Cycle"), "PERCENT_DUTY_CYCLE");
/// assert_eq!(counter_constant("Sine Wave/sec"), "SINE_WAVE_PER_SEC");
/// assert_eq!(counter_constant("# of Waves"), "NUMBER_OF_WAVES");
/// assert_eq!(counter_constant("LLC Misses"), "LLC_MISSES");
/// assert_eq!(counter_constant("Avg. Disk sec/Transfer"), "AVG_DISK_SEC_PER_TRANSFER");
/// ```
///
/// The result depends on the name alone, so it changes only when the name does (a rename that
/// consumers see anyway, since PDH paths carry counter names). The name is the one the string table
/// holds: for a `$(string.ID)` reference, the resolved text. A result that is empty or starts with a
/// digit is no Rust identifier: such a counter needs a `symbol`.
pub fn counter_constant(name: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run = String::new();
    let end_run = |run: &mut String, parts: &mut Vec<String>| {
        parts.extend(words(run).iter().map(|w| w.to_ascii_uppercase()));
        run.clear();
    };
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            run.push(c);
            continue;
        }
        end_run(&mut run, &mut parts);
        let spoken = match c {
            '%' => "PERCENT",
            '/' => "PER",
            '#' => "NUMBER",
            _ => continue,
        };
        parts.push(spoken.to_owned());
    }
    end_run(&mut run, &mut parts);
    parts.join("_")
}

/// Why `constant` (from [`counter_constant`]) cannot name a Rust constant, if it cannot.
pub fn constant_problem(constant: &str) -> Option<String> {
    match constant.chars().next() {
        None => Some("it has no ASCII letters or digits".to_owned()),
        Some(c) if c.is_ascii_digit() => Some(format!("`{constant}` starts with a digit")),
        Some(_) => None,
    }
}

/// Rust's keywords (strict and reserved, edition 2024).
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof",
    "unsized", "virtual", "yield",
];

/// Why `name` (a converted symbol) cannot name a generated Rust item, if it cannot: a keyword would
/// need a raw identifier, which the generated code does not use so that every name reads plainly.
pub fn rust_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it has no letters or digits".to_owned());
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Some(format!("`{name}` starts with a digit"));
    }
    if KEYWORDS.contains(&name) {
        return Some(format!("`{name}` is a Rust keyword"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_the_manifests_symbols() {
        assert_eq!(snake_case("InstructionsRetired"), "instructions_retired");
        assert_eq!(snake_case("LlcMisses"), "llc_misses");
        assert_eq!(snake_case("HardwareCounters"), "hardware_counters");
        assert_eq!(snake_case("PMUState"), "pmu_state");
        assert_eq!(snake_case("MY_LOGICALDISK_FREE_MB"), "my_logicaldisk_free_mb");
        assert_eq!(snake_case("Llc2Misses"), "llc2_misses");
        assert_eq!(snake_case("_Leading__Double_"), "leading_double");
        assert_eq!(screaming_snake_case("InstructionsPerSec"), "INSTRUCTIONS_PER_SEC");
        assert_eq!(screaming_snake_case("BranchMispredictPercentBase"), "BRANCH_MISPREDICT_PERCENT_BASE");
    }

    #[test]
    fn c_identifiers() {
        assert!(is_c_identifier("Values"));
        assert!(is_c_identifier("_x9"));
        assert!(!is_c_identifier("9x"));
        assert!(!is_c_identifier("a-b"));
        assert!(!is_c_identifier(""));
        assert!(!is_c_identifier("Grüße"));
    }

    #[test]
    fn constants_from_names() {
        assert_eq!(counter_constant("Instructions Retired/sec"), "INSTRUCTIONS_RETIRED_PER_SEC");
        assert_eq!(counter_constant("% Hits Base"), "PERCENT_HITS_BASE");
        assert_eq!(counter_constant("PMUState"), "PMU_STATE");
        assert_eq!(counter_constant("  Queue -- Depth  "), "QUEUE_DEPTH");
        assert_eq!(counter_constant("Größe"), "GR_E");
        assert_eq!(counter_constant("—"), "");
        assert_eq!(constant_problem(""), Some("it has no ASCII letters or digits".to_owned()));
        assert_eq!(constant_problem("1ST_TOTAL"), Some("`1ST_TOTAL` starts with a digit".to_owned()));
        assert_eq!(constant_problem("TOTAL"), None);
    }

    #[test]
    fn keywords_are_refused() {
        assert!(rust_name_problem("type").is_some());
        assert!(rust_name_problem("").is_some());
        assert!(rust_name_problem("types").is_none());
        assert!(rust_name_problem("1a").is_some());
    }
}
