//! Output formats.

pub mod render;
pub mod transcript;
