//! Code shared by the integration tests and the `gen_labelled` example.
pub mod labelled_gen;
