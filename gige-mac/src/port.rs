//! [`MacPort`]: a single-port MAC endpoint in the `gmii` domain, standing in for the
//! DP83820 until the PCI model exists, and the reference for how a MAC plugs into a link.
//!
//! ```text
//!  driver --Transmit--> MacPort.tx (GmiiTx) ==link==> far port (RxStart, RxEnd)
//!                       MacPort.rx (GmiiRx) <==link== far port's GmiiTx
//!                         -> inbox (good frames, in order) / errors (bad frames)
//! ```
//!
//! Ports: `link` (the [`Attachment`] its transmitter sends into). Parameters:
//! [`WireParams`] (frame limits, IFG), [`MacPortParams`] (queue bound). Statistics: the
//! transmitter's [`TxStats`](crate::gmii::TxStats), the receiver's
//! [`RxStats`](crate::rx::RxStats), and messages it had no use for.

use crate::frame::FrameLimits;
use crate::gmii::{GmiiTx, TxDone};
use crate::link::Attachment;
use crate::msg::{MacMsg, PortIndex};
use crate::params::{MacPortParams, WireParams};
use crate::rx::{GmiiRx, Received, RxError};
use sim_kernel::Ctx;

/// A bad frame a port received, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxFailure {
    /// The frame's id.
    pub id: crate::frame::FrameId,
    /// Why it was not accepted.
    pub error: RxError,
}

/// A single-port MAC: GMII transmitter + receiver, an inbox of good frames.
#[derive(Clone, Debug)]
pub struct MacPort {
    tx: GmiiTx,
    rx: GmiiRx,
    inbox: Vec<Received>,
    failures: Vec<RxFailure>,
    sent: Vec<TxDone>,
    unexpected: u64,
}

impl MacPort {
    /// A port whose transmitter sends into `link`.
    #[must_use]
    pub fn new(link: Attachment, wire: &WireParams, params: &MacPortParams) -> Self {
        Self {
            tx: GmiiTx::new("gmii.tx", PortIndex(0), link, wire, params.queue_frames),
            rx: GmiiRx::new(FrameLimits::from_wire(wire)),
            inbox: Vec::new(),
            failures: Vec::new(),
            sent: Vec::new(),
            unexpected: 0,
        }
    }

    /// Handles one message at `ctx.now()`.
    pub fn handle<M: From<MacMsg>>(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, M>) {
        match msg {
            MacMsg::Transmit { frame } => {
                // Refusals are counted by the transmitter.
                let _ = self.tx.enqueue(frame, ctx);
            }
            MacMsg::TxWake { .. } => {
                if let Some(done) = self.tx.wake(ctx) {
                    self.sent.push(done);
                }
            }
            MacMsg::TxReorderRelease { .. } => self.tx.reorder_release(ctx),
            MacMsg::RxStart { frame, .. } => self.rx.start(&frame),
            // A streamed frame's bytes: only the whole frame at its end matters here.
            MacMsg::RxData { .. } => {}
            MacMsg::RxEnd { frame, .. } => {
                let id = frame.id();
                match self.rx.end(frame, ctx.now()) {
                    Ok(r) => self.inbox.push(r),
                    Err(error) => self.failures.push(RxFailure { id, error }),
                }
            }
            other => {
                self.unexpected += 1;
                tracing::warn!(target: "mac::gmii", msg = other.name(), "message a MAC port does not handle");
            }
        }
    }

    /// The transmitter (state, statistics, capture).
    #[must_use]
    pub fn tx(&self) -> &GmiiTx {
        &self.tx
    }

    /// The transmitter, to turn capture on or take captured frames.
    pub fn tx_mut(&mut self) -> &mut GmiiTx {
        &mut self.tx
    }

    /// The receiver (statistics).
    #[must_use]
    pub fn rx(&self) -> &GmiiRx {
        &self.rx
    }

    /// Good frames received, in order of arrival.
    #[must_use]
    pub fn inbox(&self) -> &[Received] {
        &self.inbox
    }

    /// Takes the good frames received so far (for long runs that drain the inbox).
    pub fn take_inbox(&mut self) -> Vec<Received> {
        std::mem::take(&mut self.inbox)
    }

    /// Takes the record of frames sent so far.
    pub fn take_sent(&mut self) -> Vec<TxDone> {
        std::mem::take(&mut self.sent)
    }

    /// Bad frames received, in order of arrival.
    #[must_use]
    pub fn failures(&self) -> &[RxFailure] {
        &self.failures
    }

    /// Frames sent completely, in order.
    #[must_use]
    pub fn sent(&self) -> &[TxDone] {
        &self.sent
    }

    /// Messages received that a MAC port has no use for.
    #[must_use]
    pub fn unexpected(&self) -> u64 {
        self.unexpected
    }
}
