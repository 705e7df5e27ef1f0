//! Integration tests, one binary (each extra test binary would link libtorch again).

mod stage2;
