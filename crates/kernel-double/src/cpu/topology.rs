//! The virtual machine's processors: a count per processor group, 4 processors in group 0 by default.
//!
//! **Hot add.** A machine can start processors after boot (dynamic processor addition, Windows Server):
//! [`reserve_hot_add`] names how many may come, and [`hot_add`] starts one while the driver runs. It
//! becomes active at once with the next system index, in the last group while that group has room
//! (else a new one): from then on KeQueryActiveProcessorCountEx counts it, KeGetProcessorNumberFromIndex
//! names it, and KeIpiGenericCall runs on it ("runs on all processors": learn.microsoft.com,
//! KeIpiGenericCall; "the number of active logical processors", KeQueryActiveProcessorCountEx, which
//! changes when a processor is added: KeRegisterProcessorChangeCallback). Nothing tells a driver that
//! registered no processor change callback.

use crate::poison::IgnorePoison;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU32, Ordering};

static GROUPS: RwLock<Vec<u8>> = RwLock::new(Vec::new());
/// Processors that may still be hot-added.
static SPARE: AtomicU32 = AtomicU32::new(0);

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

/// Lets `spare` more processors be hot-added later ([`hot_add`]). Call before loading the driver: the
/// virtual processors' state is sized for every processor that may become active.
pub fn reserve_hot_add(spare: u32) {
    SPARE.store(spare, Ordering::SeqCst);
}

/// Starts one reserved processor: it is active from now on, with the next system index (returned),
/// in the last group if that has room, else in a new group. Panics if none is left to add.
pub fn hot_add() -> u32 {
    SPARE
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |spare| spare.checked_sub(1))
        .expect("no processor was reserved for hot add");
    let mut configured = GROUPS.write().ignore_poison();
    if configured.is_empty() {
        *configured = groups_or_default(&configured);
    }
    match configured.last_mut() {
        Some(last) if u32::from(*last) < MAX_GROUP_SIZE => *last += 1,
        _ => configured.push(1),
    }
    configured.iter().map(|&count| u32::from(count)).sum::<u32>() - 1
}

/// Every processor that is active or may still be hot-added: what per-processor state is sized for.
pub fn possible_count() -> u32 {
    processor_count() + SPARE.load(Ordering::SeqCst)
}

fn groups_or_default(groups: &[u8]) -> Vec<u8> {
    if groups.is_empty() { vec![4] } else { groups.to_vec() }
}

fn groups() -> Vec<u8> {
    groups_or_default(&GROUPS.read().ignore_poison())
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
