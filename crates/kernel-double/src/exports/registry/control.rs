//! Test control of the fake registry exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// Sets value `name` of key `key` (created if missing) to `data` of registry type `kind`, as an
/// administrator's `reg add` long before: in memory and in the hive on disk.
pub fn set_value(key: &str, name: &str, kind: u32, data: Vec<u8>) {
    with_tree(|tree| {
        for keys in [&mut tree.keys, &mut tree.disk] {
            keys.entry(key.to_lowercase()).or_default().insert(name.to_lowercase(), (kind, data.clone()));
        }
        write::save(tree).expect("writing the hive file");
    });
}

/// Deletes value `name` of `key`, if present, as an administrator's `reg delete` (in memory and on
/// disk).
pub fn delete_value(key: &str, name: &str) {
    with_tree(|tree| {
        for keys in [&mut tree.keys, &mut tree.disk] {
            if let Some(values) = keys.get_mut(&key.to_lowercase()) {
                values.remove(&name.to_lowercase());
            }
        }
        write::save(tree).expect("writing the hive file");
    });
}

/// Value `name` of `key` as every caller sees it now (in memory): (type, data).
pub fn value(key: &str, name: &str) -> Option<(u32, Vec<u8>)> {
    with_tree(|tree| tree.keys.get(&key.to_lowercase())?.get(&name.to_lowercase()).cloned())
}

/// Value `name` of `key` as the hive on disk holds it (what a reboot would find).
pub fn value_on_disk(key: &str, name: &str) -> Option<(u32, Vec<u8>)> {
    with_tree(|tree| tree.disk.get(&key.to_lowercase())?.get(&name.to_lowercase()).cloned())
}

/// Keeps the hive on disk in `file` from now on (written now, and at every flush), so that it
/// outlives this process: a bug check aborts it.
pub fn persist_hive(file: &std::path::Path) {
    with_tree(|tree| {
        tree.hive_file = Some(file.to_owned());
        write::save(tree).expect("writing the hive file");
    });
}

/// A reboot: the registry in memory becomes the hive on disk (`file`'s, if it exists, as a
/// [`persist_hive`] of another process left it), losing every change never flushed. Open handles
/// stay counted (a leak is still one).
pub fn reboot(file: Option<&std::path::Path>) {
    with_tree(|tree| {
        if let Some(keys) = file.and_then(write::load) {
            tree.disk = keys;
        }
        tree.keys = tree.disk.clone();
    });
}

/// A REG_SZ's data: UTF-16LE with a terminator.
pub fn sz(text: &str) -> Vec<u8> {
    text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// A REG_MULTI_SZ's data: each string terminated, then an empty string.
pub fn multi_sz(strings: &[&str]) -> Vec<u8> {
    let mut units: Vec<u16> = strings.iter().flat_map(|s| s.encode_utf16().chain([0])).collect();
    units.push(0);
    units.into_iter().flat_map(u16::to_le_bytes).collect()
}

/// Key handles open now.
pub fn open_handles() -> usize {
    with_tree(|tree| tree.handles.len())
}
