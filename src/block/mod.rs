//! The published blocks: each processor's Hardware Counters block as the reads store into it
//! (`publish`), and which manifest field holds which value, matched to the event table at compile
//! time (`fields`). The session's reads write them; PCW's collect hands them on as they are.
#![deny(unsafe_code)]

pub mod fields;
pub mod publish;
