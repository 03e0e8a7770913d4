//! kosha-ops: the operators' and testers' CLI (SPEC §11).
fn main() {}
