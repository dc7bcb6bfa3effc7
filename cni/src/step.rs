//! Typed failures of the steps a teardown takes, collected rather than stopped at (every step
//! runs even when one fails), and mapped to one CNI error code in one place.

use crate::journal::JournalError;
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode};

/// One step that failed.
#[derive(Debug)]
pub enum StepError {
    /// Another operation holds a lock the step needs: retrying later will work.
    Busy(String),
    /// The device is missing or unusable (VF gone, PF without the VF).
    Device(String),
    /// A kernel operation failed (netlink, namespace, RDMA).
    Kernel(String),
    /// The IPAM plugin failed.
    Ipam(String),
    /// The state journal could not be read or written.
    Journal(String),
}

impl StepError {
    /// A journal failure: a lock timeout is "busy", the rest is a state error.
    pub fn journal(e: &JournalError) -> Self {
        match e {
            JournalError::LockTimeout { .. } => Self::Busy(e.to_string()),
            _ => Self::Journal(chain(e)),
        }
    }

    /// A kernel failure while doing `what`.
    pub fn kernel(what: impl std::fmt::Display, e: &dyn std::error::Error) -> Self {
        Self::Kernel(format!("{what}: {}", chain(e)))
    }

    /// The CNI code this failure alone would be answered with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Busy(_) => ErrorCode::TryAgainLater,
            Self::Device(_) => ErrorCode::Device,
            Self::Kernel(_) => ErrorCode::Kernel,
            Self::Ipam(_) => ErrorCode::Ipam,
            Self::Journal(_) => ErrorCode::State,
        }
    }

    fn message(&self) -> &str {
        match self {
            Self::Busy(m)
            | Self::Device(m)
            | Self::Kernel(m)
            | Self::Ipam(m)
            | Self::Journal(m) => m,
        }
    }
}

/// The answer for a set of failed steps: the code of the failure a retry is most likely to
/// clear first (busy, then state, device, kernel, IPAM), every failure in the details.
pub fn to_cni_error(msg: impl Into<String>, errors: &[StepError]) -> CniError {
    let rank = |e: &StepError| match e {
        StepError::Busy(_) => 0,
        StepError::Journal(_) => 1,
        StepError::Device(_) => 2,
        StepError::Kernel(_) => 3,
        StepError::Ipam(_) => 4,
    };
    let code = errors
        .iter()
        .min_by_key(|e| rank(e))
        .map_or(ErrorCode::Kernel, StepError::code);
    CniError::new(code, msg).with_detail(
        errors
            .iter()
            .map(StepError::message)
            .collect::<Vec<_>>()
            .join("; "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_the_most_retryable_failure() {
        let e = to_cni_error(
            "could not release",
            &[
                StepError::Kernel("move back".into()),
                StepError::Busy("VF busy".into()),
            ],
        );
        assert_eq!(e.code, ErrorCode::TryAgainLater);
        assert_eq!(e.details, "move back; VF busy");
        let e = to_cni_error("x", &[StepError::Device("no VF".into())]);
        assert_eq!(e.code, ErrorCode::Device);
        let e = to_cni_error("x", &[StepError::Ipam("host-local".into())]);
        assert_eq!(e.code, ErrorCode::Ipam);
    }
}
