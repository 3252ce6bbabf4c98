//! Grants: what a third-party tool may reach beyond its own memory and
//! time, from the component's request to the Store it runs in. One
//! [`Allowance`] shape is requested (the component's `toolhost:requests`
//! section) and granted (the operator's `toolGrants`, kept by [`persist`]);
//! [`intersect`] turns the two into the [`Grants`] a Store is built with, and
//! names what was asked for but not given.

mod allowance;
mod effective;
mod hosts;
pub mod persist;
pub mod wassette;

pub use allowance::{Allowance, AllowanceError, DirAccess, DirRequest};
pub use effective::{CallLimits, FileAccess, Grants, intersect};
pub(crate) use hosts::non_public;
pub use hosts::{HostName, HostPattern, valid_host};
