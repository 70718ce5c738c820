//! The "Hardware Counters" instances: one per logical processor.
//!
//! * Id: `group * 64 + number`, the processor's position across groups. It is stable across boots
//!   of the same machine and meaningful (Windows numbers processors within a group 0..63).
//! * Name: `"group,number"`, the convention of Windows' own "Processor Information" counterset, so
//!   `\Hardware Counters(0,5)` and `\Processor Information(0,5)` are the same processor. Names are
//!   digits and a comma, so they never differ only by case.

/// Longest name: "65535,63".
const NAME_CAPACITY: usize = 8;

/// Processors per group (a group is at most 64 processors wide: its affinity is a 64-bit mask).
pub const PROCESSORS_PER_GROUP: u32 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessorInstance {
    /// The system's processor index (KeGetProcessorNumberFromIndex), which per-processor state is
    /// indexed by.
    index: u32,
    id: u32,
    name: [u16; NAME_CAPACITY],
    name_len: u8,
}

impl ProcessorInstance {
    /// The instance of the processor at system index `index`, which is `number` in `group`.
    pub fn new(index: u32, group: u16, number: u8) -> Self {
        let mut instance = ProcessorInstance {
            index,
            id: u32::from(group) * PROCESSORS_PER_GROUP + u32::from(number),
            name: [0; NAME_CAPACITY],
            name_len: 0,
        };
        instance.push_decimal(u32::from(group));
        instance.push(u16::from(b','));
        instance.push_decimal(u32::from(number));
        instance
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// The processor's group.
    pub fn group(&self) -> u16 {
        (self.id / PROCESSORS_PER_GROUP) as u16
    }

    /// The processor's number within its group.
    pub fn number(&self) -> u8 {
        (self.id % PROCESSORS_PER_GROUP) as u8
    }

    /// The name in UTF-16, without terminator.
    pub fn name(&self) -> &[u16] {
        &self.name[..usize::from(self.name_len)]
    }

    fn push(&mut self, unit: u16) {
        self.name[usize::from(self.name_len)] = unit;
        self.name_len += 1;
    }

    fn push_decimal(&mut self, value: u32) {
        let mut digits = [0u16; 10];
        let mut count = 0;
        let mut rest = value;
        loop {
            digits[count] = u16::from(b'0') + (rest % 10) as u16;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        for &digit in digits[..count].iter().rev() {
            self.push(digit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(instance: &ProcessorInstance) -> String {
        String::from_utf16(instance.name()).unwrap()
    }

    #[test]
    fn names_and_ids_follow_group_and_number() {
        let first = ProcessorInstance::new(0, 0, 0);
        assert_eq!((name_of(&first), first.id(), first.index()), ("0,0".into(), 0, 0));
        let second_group = ProcessorInstance::new(40, 1, 3);
        assert_eq!((name_of(&second_group), second_group.id(), second_group.index()), ("1,3".into(), 67, 40));
        let widest = ProcessorInstance::new(7, u16::MAX, 63);
        assert_eq!(name_of(&widest), "65535,63");
        assert_eq!(widest.id(), 65535 * 64 + 63);
        assert_eq!((widest.group(), widest.number()), (u16::MAX, 63));
        assert_eq!((second_group.group(), second_group.number()), (1, 3));
    }

    #[test]
    fn every_processor_of_a_large_machine_has_a_unique_name_and_id() {
        // 2048 processors in 32 groups of 64, and an uneven split of 72 in two groups of 36.
        let machines: [Vec<(u16, u8)>; 2] = [
            (0..32).flat_map(|g| (0..64).map(move |n| (g, n))).collect(),
            (0..2).flat_map(|g| (0..36).map(move |n| (g, n))).collect(),
        ];
        for processors in machines {
            let instances: Vec<_> = processors
                .iter()
                .enumerate()
                .map(|(i, &(g, n))| ProcessorInstance::new(i as u32, g, n))
                .collect();
            let names: std::collections::HashSet<_> = instances.iter().map(name_of).collect();
            let ids: std::collections::HashSet<_> = instances.iter().map(|i| i.id()).collect();
            assert_eq!(names.len(), instances.len());
            assert_eq!(ids.len(), instances.len());
            assert!(ids.iter().all(|&id| id < super::super::query::ANY_INSTANCE_ID - 1));
        }
    }
}
