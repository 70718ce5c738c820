//! The virtual machine's processors: a count per processor group, 4 processors in group 0 by default.

use crate::poison::IgnorePoison;
use std::sync::RwLock;

static GROUPS: RwLock<Vec<u8>> = RwLock::new(Vec::new());

/// Most processors in one group (Windows' limit).
pub const MAX_GROUP_SIZE: u32 = 64;

/// Sets the topology: `processors` split into groups of at most `per_group` (e.g. 72 in 2 groups of 36
/// is `configure(72, 36)`). Call before loading the driver.
pub fn configure(processors: u32, per_group: u32) {
    *GROUPS.write().ignore_poison() = split(processors, per_group);
}

/// Group sizes for `processors` in groups of at most `per_group`.
fn split(processors: u32, per_group: u32) -> Vec<u8> {
    assert!(processors > 0 && per_group > 0 && per_group <= MAX_GROUP_SIZE, "bad topology");
    let mut groups = Vec::new();
    let mut left = processors;
    while left > 0 {
        let size = left.min(per_group);
        groups.push(size as u8);
        left -= size;
    }
    groups
}

fn groups() -> Vec<u8> {
    let groups = GROUPS.read().ignore_poison();
    if groups.is_empty() { vec![4] } else { groups.clone() }
}

/// Active processors in `group`, or in every group for ALL_PROCESSOR_GROUPS (0xFFFF).
pub fn active_count(group: u16) -> u32 {
    let groups = groups();
    if group == 0xFFFF {
        groups.iter().map(|&count| u32::from(count)).sum()
    } else {
        groups.get(usize::from(group)).map_or(0, |&count| u32::from(count))
    }
}

/// Every active processor.
pub fn processor_count() -> u32 {
    active_count(0xFFFF)
}

/// (group, number) of system index `index`: indexes run through group 0, then group 1, ...
pub fn number_from_index(index: u32) -> Option<(u16, u8)> {
    number_in(&groups(), index)
}

/// System index of (group, number), if that processor exists.
pub fn index_from_number(group: u16, number: u8) -> Option<u32> {
    let groups = groups();
    let size = *groups.get(usize::from(group))?;
    (number < size).then(|| {
        groups[..usize::from(group)].iter().map(|&count| u32::from(count)).sum::<u32>() + u32::from(number)
    })
}

fn number_in(groups: &[u8], index: u32) -> Option<(u16, u8)> {
    let mut first = 0u32;
    for (group, &count) in groups.iter().enumerate() {
        if index < first + u32::from(count) {
            return Some((group as u16, (index - first) as u8));
        }
        first += u32::from(count);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pure: unit tests share one process, and others read the configured topology.
    #[test]
    fn seventy_two_processors_in_two_groups() {
        let groups = split(72, 36);
        assert_eq!(groups, [36, 36]);
        assert_eq!(number_in(&groups, 71), Some((1, 35)));
        assert_eq!(number_in(&groups, 35), Some((0, 35)));
        assert_eq!(number_in(&groups, 72), None);
        assert_eq!(split(128, 64), [64, 64]);
        assert_eq!(split(4, 64), [4]);
    }
}
