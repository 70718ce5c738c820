//! Cost of matching instance names against a PCW `InstanceMask`, on pathological and typical masks.
//!
//! For each mask and name the table shows the steps the matcher counts (bounded by
//! `(|mask| + 1) * (|name| + 1)`), their ratio to `|mask| * |name|` (so the polynomial bound is visible:
//! it stays at or below about 1 however long the name), and the wall-clock time of one `matches` call,
//! averaged over many calls.
//!
//! The library is a `cdylib` (the driver image), which benchmarks cannot link against, so the matcher's
//! source, which is pure `core` code, is compiled into this benchmark directly.

use std::hint::black_box;
use std::time::{Duration, Instant};

// The driver's `pcw` folder as a module of this benchmark, so that the matcher's own child modules
// (its tests) resolve as in the driver.
#[allow(dead_code)]
#[path = "../src/pcw"]
mod pcw {
    pub mod wildcard;
}

use pcw::wildcard::{ascii_upcase, matches, matches_counting};

/// Time spent measuring each row, roughly.
const TARGET: Duration = Duration::from_millis(40);

fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// Average wall-clock nanoseconds of one `matches(mask, name)` call, and the number of calls timed.
fn ns_per_match(mask: &[u16], name: &[u16]) -> (f64, u64) {
    // Calibrate: double the batch until it takes a measurable time.
    let mut iterations: u64 = 1;
    loop {
        let start = Instant::now();
        for _ in 0..iterations {
            black_box(matches(black_box(mask), black_box(name), ascii_upcase));
        }
        let elapsed = start.elapsed();
        if elapsed >= TARGET / 8 || iterations >= 1 << 30 {
            // Scale to about TARGET and measure for real.
            let scale = (TARGET.as_secs_f64() / elapsed.as_secs_f64().max(1e-9)).clamp(1.0, 64.0);
            let iterations = ((iterations as f64) * scale) as u64;
            let start = Instant::now();
            for _ in 0..iterations {
                black_box(matches(black_box(mask), black_box(name), ascii_upcase));
            }
            return (start.elapsed().as_nanos() as f64 / iterations as f64, iterations);
        }
        iterations *= 2;
    }
}

fn row(label: &str, mask: &str, name: &str) {
    let (mask, name) = (utf16(mask), utf16(name));
    let (matched, steps) = matches_counting(&mask, &name, ascii_upcase);
    let bound = (mask.len() + 1) * (name.len() + 1);
    assert!(steps <= bound, "{label}: {steps} steps exceed the bound {bound}");
    let product = mask.len() * name.len();
    let ratio = if product == 0 { "-".to_string() } else { format!("{:.3}", steps as f64 / product as f64) };
    let (ns, iterations) = ns_per_match(&mask, &name);
    println!(
        "{label:<28} {:>6} {:>6} {:>7} {:>10} {:>12} {ratio:>9} {ns:>14.1} {:>8.2} {iterations:>10}",
        mask.len(),
        name.len(),
        matched,
        steps,
        bound,
        ns / steps.max(1) as f64,
    );
}

fn main() {
    println!(
        "{:<28} {:>6} {:>6} {:>7} {:>10} {:>12} {:>9} {:>14} {:>8} {:>10}",
        "mask",
        "|mask|",
        "|name|",
        "match",
        "steps",
        "(m+1)(n+1)",
        "steps/mn",
        "ns/match",
        "ns/step",
        "calls"
    );

    println!("-- typical: processor instances \"group,number\" and _Total");
    row("*", "*", "0,5");
    row("*", "*", "_Total");
    row("0,5", "0,5", "0,5");
    row("0,5", "0,5", "1,12");
    row("0,*", "0,*", "0,17");
    row("?,?", "?,?", "0,17");
    row("_total", "_total", "_Total");

    let long_literal = format!("*{}b", "a".repeat(20));
    let many_stars = "*a".repeat(50) + "b";
    let pathological: [(&str, &str); 7] = [
        ("*a*a*a*a*b", "*a*a*a*a*b"),
        ("*a*a*a*a*a*a*a*a*b", "*a*a*a*a*a*a*a*a*b"),
        ("?*?*?*?*x", "?*?*?*?*x"),
        ("*a*a*a*a*a*a*a*a*a (match)", "*a*a*a*a*a*a*a*a*a"),
        ("*a^20 b", &long_literal),
        ("(*a)^50 b", &many_stars),
        ("*", "*"),
    ];
    for len in [100, 1000, 10_000] {
        println!("-- pathological: name a^{len}");
        let name = "a".repeat(len);
        for (label, mask) in pathological {
            row(label, mask, &name);
        }
    }
}
