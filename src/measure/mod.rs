//! Measurement helpers that need no model: peak FLOP/s and bandwidth of a GPU.

pub mod peaks;
