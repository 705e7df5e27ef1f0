//! Integration tests, one module per area, built as a single binary (each extra test file would
//! link libtorch again).
mod kineto;
