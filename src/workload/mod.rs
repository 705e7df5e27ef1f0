//! The libtorch side of llmprof, compiled only into `llmprof-worker` (never into the library
//! or the front end, which must start without loading libtorch).
pub mod model;
