//! The host's shell parser (tree-sitter-bash run by the host).

pub use crate::bindings::toolhost::tool::shell::{
    Classification, Operator, ParsedCommand, Redirection, SimpleCommand, classify, parse,
};
