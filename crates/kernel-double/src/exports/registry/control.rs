//! Test control of the fake registry exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// Sets value `name` of key `key` (created if missing) to `data` of registry type `kind`.
pub fn set_value(key: &str, name: &str, kind: u32, data: Vec<u8>) {
    with_tree(|tree| {
        tree.keys.entry(key.to_lowercase()).or_default().insert(name.to_lowercase(), (kind, data))
    });
}

/// Deletes value `name` of `key`, if present.
pub fn delete_value(key: &str, name: &str) {
    with_tree(|tree| {
        if let Some(values) = tree.keys.get_mut(&key.to_lowercase()) {
            values.remove(&name.to_lowercase());
        }
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
