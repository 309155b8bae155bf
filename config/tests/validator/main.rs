//! The validator's integration tests, one binary: the fixture corpus, diff,
//! validation without files, and properties over generated configurations.

mod analysis;
mod corpus;
mod diff;
mod paths_only;
mod properties;
mod sasl;
mod sni;
