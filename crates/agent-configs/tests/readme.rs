//! The README a newcomer reads: its first screen says what pmupcw is, gives the two set-up commands and
//! says where verification on real Windows stands, and its troubleshooting table explains every value
//! the driver's status counters PMU State and Top-down Source can report (`src/pcw/driver_status.rs`),
//! and Memory Controller State (`src/imc/status.rs`).

use agent_configs::{driver_values, memory_controller_values, read};

#[test]
fn the_first_screen_has_what_it_is_the_two_commands_and_the_windows_status() {
    let readme = read("README.md");
    let first: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    assert!(first.contains("Windows kernel-mode driver"), "{first}");
    assert!(first.contains("nothing has run on real Windows yet"), "{first}");
    for command in [
        "bash scripts/linux/setup.sh && cargo make package",
        "bash scripts/linux/setup.sh && cargo make test",
    ] {
        assert_eq!(readme.lines().filter(|line| *line == command).count(), 1, "{command}");
        assert!(first.lines().any(|line| line == command), "{command} is not on the first screen");
    }
}

/// The values the README's troubleshooting table explains for `counter`.
fn table_values(readme: &str, counter: &str) -> std::collections::BTreeSet<u32> {
    let section = readme.split("## Troubleshooting").nth(1).expect("a Troubleshooting section");
    section
        .lines()
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (cells.len() > 4 && cells[1] == counter && !cells[3].is_empty() && !cells[4].is_empty())
                .then(|| cells[2].parse().ok())
                .flatten()
        })
        .collect()
}

#[test]
fn the_troubleshooting_table_explains_every_status_value() {
    let readme = read("README.md");
    assert_eq!(table_values(&readme, "PMU State"), driver_values("PmuState"));
    assert_eq!(table_values(&readme, "Top-down Source"), driver_values("TopdownSource"));
    assert_eq!(table_values(&readme, "Memory Controller State"), memory_controller_values());
    // The check sees a missing row.
    let without = readme.replace("| PMU State | 7 |", "| PMU State | x |");
    assert_ne!(table_values(&without, "PMU State"), driver_values("PmuState"));
}
