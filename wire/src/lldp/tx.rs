//! The 802.1AB transmit schedule, sans-IO: when to send, with which TTL, and the shutdown
//! LLDPDU on stop.
//!
//! - msgTxInterval (default 30 s) between regular frames;
//! - TTL = min(65535, msgTxInterval × msgTxHold + 1) (lldpd omits the +1);
//! - fast start: txFastInit frames (4) msgFastTx (1 s) apart, at start and when a new
//!   neighbour appears;
//! - txCredit: at most txCreditMax (5) frames in a burst, one credit back per second;
//! - on stop, one LLDPDU with TTL 0 so receivers forget us at once.

use std::time::{Duration, Instant};

/// Timer parameters, with 802.1AB's names and ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxTiming {
    /// msgTxInterval in seconds, 1-3600.
    pub tx_interval: u16,
    /// msgTxHold, 1-100.
    pub tx_hold: u16,
    /// msgFastTx in seconds, 1-3600.
    pub fast_tx: u16,
    /// txFastInit: frames sent fast at start or on a new neighbour, 1-8.
    pub tx_fast_init: u8,
    /// txCreditMax: the burst limit, 1-10.
    pub tx_credit_max: u8,
}

impl Default for TxTiming {
    fn default() -> Self {
        Self {
            tx_interval: 30,
            tx_hold: 4,
            fast_tx: 1,
            tx_fast_init: 4,
            tx_credit_max: 5,
        }
    }
}

/// A timer parameter outside its 802.1AB range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{parameter} is {value}, 802.1AB allows {min} to {max}")]
pub struct TxTimingError {
    /// The parameter's 802.1AB name.
    pub parameter: &'static str,
    /// Its value.
    pub value: u16,
    /// Smallest allowed.
    pub min: u16,
    /// Largest allowed.
    pub max: u16,
}

impl TxTiming {
    /// Checks every parameter against its range.
    pub fn validate(&self) -> Result<(), TxTimingError> {
        let checks = [
            ("msgTxInterval", self.tx_interval, 1, 3600),
            ("msgTxHold", self.tx_hold, 1, 100),
            ("msgFastTx", self.fast_tx, 1, 3600),
            ("txFastInit", self.tx_fast_init.into(), 1, 8),
            ("txCreditMax", self.tx_credit_max.into(), 1, 10),
        ];
        for (parameter, value, min, max) in checks {
            if !(min..=max).contains(&value) {
                return Err(TxTimingError {
                    parameter,
                    value,
                    min,
                    max,
                });
            }
        }
        Ok(())
    }

    /// The TTL to advertise: min(65535, msgTxInterval × msgTxHold + 1).
    pub fn ttl(&self) -> u16 {
        let ttl = u32::from(self.tx_interval) * u32::from(self.tx_hold) + 1;
        u16::try_from(ttl).unwrap_or(u16::MAX)
    }
}

/// When to transmit on one port.
#[derive(Debug, Clone)]
pub struct TxSchedule {
    timing: TxTiming,
    due: Instant,
    fast_left: u8,
    credit: u8,
    credit_epoch: Instant,
    stopped: bool,
}

const SECOND: Duration = Duration::from_secs(1);

impl TxSchedule {
    /// Starts transmitting at `now`, in fast start.
    pub fn start(timing: TxTiming, now: Instant) -> Result<Self, TxTimingError> {
        timing.validate()?;
        Ok(Self {
            timing,
            due: now,
            fast_left: timing.tx_fast_init,
            credit: timing.tx_credit_max,
            credit_epoch: now,
            stopped: false,
        })
    }

    /// The timing in use.
    pub fn timing(&self) -> TxTiming {
        self.timing
    }

    fn refill(&mut self, now: Instant) {
        let seconds = now.saturating_duration_since(self.credit_epoch).as_secs();
        if seconds > 0 {
            let gained = u8::try_from(seconds).unwrap_or(u8::MAX);
            self.credit = self
                .credit
                .saturating_add(gained)
                .min(self.timing.tx_credit_max);
            self.credit_epoch += Duration::from_secs(seconds);
        }
    }

    /// If a frame is due at `now`, consumes a credit, schedules the next one and returns the
    /// TTL to put in it.
    pub fn poll(&mut self, now: Instant) -> Option<u16> {
        if self.stopped || now < self.due {
            return None;
        }
        self.refill(now);
        if self.credit == 0 {
            return None;
        }
        self.credit -= 1;
        self.fast_left = self.fast_left.saturating_sub(1);
        let gap = if self.fast_left > 0 {
            self.timing.fast_tx
        } else {
            self.timing.tx_interval
        };
        self.due = now + Duration::from_secs(gap.into());
        Some(self.timing.ttl())
    }

    /// When [`Self::poll`] will next return a frame (`None` once stopped).
    pub fn next_due(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        if self.credit == 0 {
            return Some(self.due.max(self.credit_epoch + SECOND));
        }
        Some(self.due)
    }

    /// Something advertised changed: send as soon as credit allows.
    pub fn local_change(&mut self, now: Instant) {
        if !self.stopped {
            self.due = self.due.min(now);
        }
    }

    /// A new neighbour appeared: fast start again (unless already in it).
    pub fn new_neighbor(&mut self, now: Instant) {
        if !self.stopped && self.fast_left == 0 {
            self.fast_left = self.timing.tx_fast_init;
            self.due = self.due.min(now);
        }
    }

    /// Stops the schedule. Returns true when the caller must now send the shutdown LLDPDU
    /// (TTL 0): the first time only.
    pub fn stop(&mut self) -> bool {
        !std::mem::replace(&mut self.stopped, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Every instant at which frames go out in `[0, until)`, polling each 100 ms.
    fn run(s: &mut TxSchedule, t0: Instant, until: u64) -> Vec<u64> {
        let mut sent = Vec::new();
        for tick in 0..until * 10 {
            let now = t0 + Duration::from_millis(tick * 100);
            if s.poll(now).is_some() {
                sent.push(tick / 10);
            }
        }
        sent
    }

    #[test]
    fn ttl_formula() {
        assert_eq!(TxTiming::default().ttl(), 121);
        let t = TxTiming {
            tx_interval: 3600,
            tx_hold: 100,
            ..TxTiming::default()
        };
        assert_eq!(t.ttl(), 65535);
    }

    #[test]
    fn ranges_are_enforced() {
        let t = TxTiming {
            tx_interval: 0,
            ..TxTiming::default()
        };
        let e = TxSchedule::start(t, Instant::now()).unwrap_err();
        assert_eq!(e.parameter, "msgTxInterval");
        let t = TxTiming {
            tx_hold: 101,
            ..TxTiming::default()
        };
        assert!(t.validate().is_err());
    }

    #[test]
    fn fast_start_then_regular_interval() {
        let t0 = Instant::now();
        let mut s = TxSchedule::start(TxTiming::default(), t0).unwrap();
        assert_eq!(s.poll(t0), Some(121));
        assert_eq!(s.next_due(), Some(t0 + secs(1)));
        let mut s = TxSchedule::start(TxTiming::default(), t0).unwrap();
        assert_eq!(run(&mut s, t0, 100), [0, 1, 2, 3, 33, 63, 93]);
    }

    #[test]
    fn new_neighbor_restarts_fast_start() {
        let t0 = Instant::now();
        let mut s = TxSchedule::start(TxTiming::default(), t0).unwrap();
        run(&mut s, t0, 10);
        s.new_neighbor(t0 + secs(10));
        let sent: Vec<u64> = (100..500)
            .filter_map(|tick| {
                let now = t0 + Duration::from_millis(tick * 100);
                s.poll(now).map(|_| tick / 10)
            })
            .collect();
        assert_eq!(sent, [10, 11, 12, 13, 43]);
    }

    #[test]
    fn credit_limits_bursts() {
        let t0 = Instant::now();
        let timing = TxTiming {
            tx_credit_max: 2,
            ..TxTiming::default()
        };
        let mut s = TxSchedule::start(timing, t0).unwrap();
        assert!(s.poll(t0).is_some());
        s.local_change(t0);
        assert!(s.poll(t0).is_some());
        s.local_change(t0);
        assert_eq!(s.poll(t0), None, "no credit left");
        assert_eq!(s.next_due(), Some(t0 + secs(1)));
        assert!(
            s.poll(t0 + secs(1)).is_some(),
            "one credit back after a second"
        );
    }

    #[test]
    fn stop_asks_for_one_shutdown() {
        let t0 = Instant::now();
        let mut s = TxSchedule::start(TxTiming::default(), t0).unwrap();
        assert!(s.stop());
        assert!(!s.stop());
        assert_eq!(s.poll(t0), None);
        assert_eq!(s.next_due(), None);
    }
}
