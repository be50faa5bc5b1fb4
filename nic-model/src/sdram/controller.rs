//! [`SdramController`]: the timing of the card SDRAM, command by command, in absolute
//! cycles of the SDRAM clock domain (cycle `k` is the domain's edge `k`).
//!
//! # Policy (design choice, documented assumption)
//!
//! - **One access at a time, in order** (blocking): an access of N bytes is split into
//!   the aligned bursts it touches (`burst_len x data_width` bytes each, 32 B by default),
//!   served in address order. Sequential bursts: the SDRAM transfers the whole aligned
//!   burst; an access is complete on the edge after the last beat that holds one of its
//!   bytes (later beats of that burst still occupy the data bus).
//! - **Open-page**: a row stays open after an access. Per burst the controller issues
//!   READ/WRITE if the row is open (row hit), ACTIVATE first if the bank is idle, and
//!   PRECHARGE + ACTIVATE first if another row is open (row conflict).
//! - **Address map row:bank:column** ([`SdramParams::bank_of`], [`SdramParams::row_of`]).
//! - **One command per cycle**; the first command of an access can issue on the edge the
//!   request is seen.
//! - **Refresh** on the fixed grid `k x refresh_interval` (k >= 1): when a refresh is due
//!   at or before the cycle the next command could issue, it goes first: PRECHARGE ALL
//!   (if a row is open) when every open bank allows it, then AUTO REFRESH `t_rp` later;
//!   every bank is idle and blocked for `t_rfc`. Refreshes also happen while no access
//!   is pending (they are accounted for when the next access arrives).
//!
//! # Command constraints (cycle `c` of the command)
//!
//! | command | allowed when | effect |
//! |---|---|---|
//! | ACTIVATE b | `c >= PRE(b) + tRP`, `c >= REF + tRFC`, `c >= ACT(any) + tRRD` | row open |
//! | READ b | `c >= ACT(b) + tRCD`, `c >= READ + BL`, `c >= WRITE + BL` | data on `c + CL .. c + CL + BL` |
//! | WRITE b | `c >= ACT(b) + tRCD`, `c >= WRITE + BL`, `c >= READ + CL + BL + turnaround` | data on `c .. c + BL` |
//! | PRECHARGE b | `c >= ACT(b) + tRAS`, `c >= READ(b) + BL`, `c >= WRITE(b) + BL - 1 + tWR` | bank idle |
//! | PRECHARGE ALL | PRECHARGE allowed for every open bank | all idle |
//! | AUTO REFRESH | all banks idle, `c >= PRE + tRP`, `c >= REF + tRFC` | busy `tRFC` |
//!
//! (`READ(b) + BL`: Micron allows PRECHARGE CL - 1 cycles before the last data-out beat,
//! i.e. BL cycles after the READ.)
//!
//! # Fast path
//!
//! [`SdramController::access`] computes each command's cycle as the maximum of its
//! constraints instead of stepping cycle by cycle, and skips runs of refreshes during
//! long idle periods. The test module `stepped` replays random access sequences on an
//! independent per-cycle model with countdown counters and checks that both issue the
//! same commands on the same cycles and finish on the same edges.

use super::params::SdramParams;
use super::store::SdramError;

/// Direction of an SDRAM access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SdramOp {
    /// Read bytes out of the SDRAM.
    Read,
    /// Write bytes into the SDRAM.
    Write,
}

/// One SDRAM command, as issued on the command bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SdramCmd {
    /// ACTIVATE: open `row` in `bank`.
    Activate {
        /// Bank.
        bank: u32,
        /// Row within the bank.
        row: u64,
    },
    /// READ of one burst from the open row of `bank`.
    Read {
        /// Bank.
        bank: u32,
    },
    /// WRITE of one burst into the open row of `bank`.
    Write {
        /// Bank.
        bank: u32,
    },
    /// PRECHARGE of one bank (closes its row).
    Precharge {
        /// Bank.
        bank: u32,
    },
    /// PRECHARGE ALL banks (before a refresh).
    PrechargeAll,
    /// AUTO REFRESH.
    Refresh,
}

/// A command and the cycle it was issued on (for tests and waveforms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CmdRecord {
    /// SDRAM cycle (edge index of the SDRAM domain).
    pub cycle: u64,
    /// The command.
    pub cmd: SdramCmd,
}

/// When an access happened and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AccessTiming {
    /// Cycle the request was seen by the controller.
    pub start: u64,
    /// Cycle of the access's first command (a refresh that went first not counted);
    /// `start` for an empty access.
    pub first_cmd: u64,
    /// Edge on which the access is complete: the edge after its last data beat. For a
    /// read, the data is available from this edge on. `start` for an empty access.
    pub done: u64,
    /// Bursts transferred.
    pub bursts: u32,
    /// Bursts that found their row open (no ACTIVATE needed).
    pub row_hits: u32,
    /// ACTIVATE commands issued for this access.
    pub activates: u32,
    /// PRECHARGE commands issued for this access (row conflicts).
    pub precharges: u32,
    /// AUTO REFRESH commands issued between the previous access and the end of this one.
    pub refreshes: u32,
}

impl AccessTiming {
    /// Cycles from the request to completion.
    #[must_use]
    pub fn latency(&self) -> u64 {
        self.done - self.start
    }
}

/// State of one bank: the open row and the earliest cycles of the next commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bank {
    open: Option<u64>,
    /// Earliest ACTIVATE (tRP after a precharge, tRFC after a refresh).
    act_ready: u64,
    /// Earliest READ/WRITE (tRCD after the ACTIVATE).
    rw_ready: u64,
    /// Earliest PRECHARGE (tRAS, read-to-precharge, write recovery).
    pre_ready: u64,
}

/// Timing state of the SDRAM and its controller; see the module docs for the policy.
#[derive(Clone, Debug)]
pub struct SdramController {
    p: SdramParams,
    banks: Vec<Bank>,
    /// Cycle of the last command issued (`None` before the first).
    last_cmd: Option<u64>,
    /// Earliest ACTIVATE to any bank (tRRD).
    act_any_ready: u64,
    /// Earliest READ by the data bus.
    rd_ready: u64,
    /// Earliest WRITE by the data bus.
    wr_ready: u64,
    /// Earliest AUTO REFRESH after the previous one (tRFC).
    ref_ready: u64,
    /// Cycle the next refresh is due.
    next_refresh: u64,
    /// Refreshes issued since construction.
    refreshes: u64,
    log: Option<Vec<CmdRecord>>,
}

impl SdramController {
    /// A controller with every bank idle at cycle 0, first refresh due at
    /// `refresh_interval`. `params` should have passed [`SdramParams::validate`]; invalid
    /// values give meaningless timing but never a panic.
    #[must_use]
    pub fn new(params: SdramParams) -> Self {
        let banks = vec![Bank::default(); params.banks.max(1) as usize];
        let next_refresh = params.refresh_interval.0.max(1);
        Self {
            p: params,
            banks,
            last_cmd: None,
            act_any_ready: 0,
            rd_ready: 0,
            wr_ready: 0,
            ref_ready: 0,
            next_refresh,
            refreshes: 0,
            log: None,
        }
    }

    /// Starts recording every command (see [`SdramController::command_log`]).
    #[must_use]
    pub fn with_command_log(mut self) -> Self {
        self.log = Some(Vec::new());
        self
    }

    /// Starts recording every command from now on (as [`with_command_log`](Self::with_command_log)).
    pub fn log_commands(&mut self) {
        if self.log.is_none() {
            self.log = Some(Vec::new());
        }
    }

    /// Commands recorded so far (empty unless built [`with_command_log`](Self::with_command_log)).
    #[must_use]
    pub fn command_log(&self) -> &[CmdRecord] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &SdramParams {
        &self.p
    }

    /// Row open in `bank`, if any.
    #[must_use]
    pub fn open_row(&self, bank: u32) -> Option<u64> {
        self.banks.get(bank as usize).and_then(|b| b.open)
    }

    /// Cycle the next refresh is due.
    #[must_use]
    pub fn next_refresh(&self) -> u64 {
        self.next_refresh
    }

    /// Refreshes issued so far.
    #[must_use]
    pub fn refreshes(&self) -> u64 {
        self.refreshes
    }

    /// Runs one access of `len` bytes at byte address `addr`, seen by the controller on
    /// cycle `start` (which must not be before the previous access's `done`; an earlier
    /// `start` is treated as that `done`). Returns its timing; the caller moves the bytes
    /// (see [`SdramStore`](super::SdramStore)) at `done`.
    ///
    /// # Errors
    /// The range runs past the end of the SDRAM; the controller state is unchanged.
    pub fn access(
        &mut self,
        start: u64,
        op: SdramOp,
        addr: u64,
        len: u64,
    ) -> Result<AccessTiming, SdramError> {
        let size = self.p.capacity.0;
        match addr.checked_add(len) {
            Some(end) if end <= size => {}
            _ => return Err(SdramError { addr, len, size }),
        }
        let refreshes_before = self.refreshes;
        let mut t = AccessTiming {
            start,
            first_cmd: start,
            done: start,
            ..AccessTiming::default()
        };
        if len == 0 {
            return Ok(t);
        }
        let bb = self.p.burst_bytes().max(1);
        let width = self.p.data_width.0.max(1);
        let first_block = addr / bb;
        let last_block = (addr + len - 1) / bb;
        let last_beat = ((addr + len - 1) % bb) / width;
        let mut first = true;
        for block in first_block..=last_block {
            let base = block * bb;
            let (bank, row) = (self.p.bank_of(base), self.p.row_of(base));
            let mut hit = true;
            let issued = loop {
                let cmd = self.next_cmd(bank, row, op);
                let e = self.earliest(cmd, start);
                if self.next_refresh <= e {
                    self.refresh(start);
                    continue;
                }
                self.issue(cmd, e);
                if first {
                    t.first_cmd = e;
                    first = false;
                }
                match cmd {
                    SdramCmd::Activate { .. } => {
                        hit = false;
                        t.activates += 1;
                    }
                    SdramCmd::Precharge { .. } => t.precharges += 1,
                    SdramCmd::Read { .. } | SdramCmd::Write { .. } => break e,
                    SdramCmd::PrechargeAll | SdramCmd::Refresh => {}
                }
            };
            t.bursts += 1;
            t.row_hits += u32::from(hit);
            if block == last_block {
                let lat = match op {
                    SdramOp::Read => self.p.cas_latency.0,
                    SdramOp::Write => 0,
                };
                t.done = issued.saturating_add(lat).saturating_add(last_beat + 1);
            }
        }
        t.refreshes = u32::try_from(self.refreshes - refreshes_before).unwrap_or(u32::MAX);
        tracing::trace!(target: "nic::sdram", ?op, addr, len, start, done = t.done,
            bursts = t.bursts, row_hits = t.row_hits, refreshes = t.refreshes, "access");
        Ok(t)
    }

    /// The next command for a burst of `op` in (`bank`, `row`), read off the bank state:
    /// READ/WRITE on a row hit, ACTIVATE on an idle bank, PRECHARGE on a row conflict.
    fn next_cmd(&self, bank: u32, row: u64, op: SdramOp) -> SdramCmd {
        match (self.bank(bank).open, op) {
            // Row hit: transfer the burst.
            (Some(r), SdramOp::Read) if r == row => SdramCmd::Read { bank },
            (Some(r), SdramOp::Write) if r == row => SdramCmd::Write { bank },
            // Row conflict: close the other row first.
            (Some(_), _) => SdramCmd::Precharge { bank },
            // Idle bank: open the row.
            (None, _) => SdramCmd::Activate { bank, row },
        }
    }

    fn bank(&self, bank: u32) -> Bank {
        self.banks.get(bank as usize).copied().unwrap_or_default()
    }

    fn bank_mut(&mut self, bank: u32) -> Option<&mut Bank> {
        self.banks.get_mut(bank as usize)
    }

    /// First cycle the command bus is free and the request has been seen.
    fn cmd_floor(&self, start: u64) -> u64 {
        self.last_cmd
            .map_or(start, |c| start.max(c.saturating_add(1)))
    }

    /// Earliest cycle `cmd` may issue for an access seen on `start`.
    fn earliest(&self, cmd: SdramCmd, start: u64) -> u64 {
        let floor = self.cmd_floor(start);
        let c = match cmd {
            SdramCmd::Activate { bank, .. } => self.bank(bank).act_ready.max(self.act_any_ready),
            SdramCmd::Read { bank } => self.bank(bank).rw_ready.max(self.rd_ready),
            SdramCmd::Write { bank } => self.bank(bank).rw_ready.max(self.wr_ready),
            SdramCmd::Precharge { bank } => self.bank(bank).pre_ready,
            SdramCmd::PrechargeAll => self.pre_all_ready(),
            SdramCmd::Refresh => self.refresh_ready(),
        };
        c.max(floor)
    }

    fn pre_all_ready(&self) -> u64 {
        self.banks
            .iter()
            .filter(|b| b.open.is_some())
            .map(|b| b.pre_ready)
            .max()
            .unwrap_or(0)
    }

    fn refresh_ready(&self) -> u64 {
        let banks = self.banks.iter().map(|b| b.act_ready).max().unwrap_or(0);
        banks.max(self.ref_ready)
    }

    /// Issues `cmd` on cycle `c` (which satisfies its constraints) and updates the state.
    fn issue(&mut self, cmd: SdramCmd, c: u64) {
        let p = &self.p;
        let (rcd, ras, rp, rrd) = (p.t_rcd.0, p.t_ras.0, p.t_rp.0, p.t_rrd.0);
        let (bl, cl, wr, ta, rfc) = (
            u64::from(p.burst_len),
            p.cas_latency.0,
            p.t_wr.0,
            p.turnaround.0,
            p.t_rfc.0,
        );
        match cmd {
            SdramCmd::Activate { bank, row } => {
                if let Some(b) = self.bank_mut(bank) {
                    b.open = Some(row);
                    b.rw_ready = c.saturating_add(rcd);
                    b.pre_ready = c.saturating_add(ras);
                }
                self.act_any_ready = c.saturating_add(rrd);
            }
            SdramCmd::Read { bank } => {
                if let Some(b) = self.bank_mut(bank) {
                    b.pre_ready = b.pre_ready.max(c.saturating_add(bl));
                }
                self.rd_ready = c.saturating_add(bl);
                let bus_free = c.saturating_add(cl).saturating_add(bl);
                self.wr_ready = self.wr_ready.max(bus_free.saturating_add(ta));
            }
            SdramCmd::Write { bank } => {
                if let Some(b) = self.bank_mut(bank) {
                    let last_beat = c.saturating_add(bl).saturating_sub(1);
                    b.pre_ready = b.pre_ready.max(last_beat.saturating_add(wr));
                }
                self.wr_ready = c.saturating_add(bl);
                self.rd_ready = self.rd_ready.max(c.saturating_add(bl));
            }
            SdramCmd::Precharge { bank } => {
                if let Some(b) = self.bank_mut(bank) {
                    b.open = None;
                    b.act_ready = c.saturating_add(rp);
                }
            }
            SdramCmd::PrechargeAll => {
                for b in self.banks.iter_mut().filter(|b| b.open.is_some()) {
                    b.open = None;
                    b.act_ready = c.saturating_add(rp);
                }
            }
            SdramCmd::Refresh => {
                for b in &mut self.banks {
                    b.act_ready = b.act_ready.max(c.saturating_add(rfc));
                }
                self.ref_ready = c.saturating_add(rfc);
                let interval = self.p.refresh_interval.0.max(1);
                self.next_refresh = self.next_refresh.saturating_add(interval);
                self.refreshes += 1;
            }
        }
        self.last_cmd = Some(c);
        if let Some(log) = self.log.as_mut() {
            log.push(CmdRecord { cycle: c, cmd });
        }
    }

    /// Performs the refresh that is due (and, first, any run of earlier refreshes that
    /// fall exactly on their due cycles while every bank is idle).
    fn refresh(&mut self, start: u64) {
        let any_open = self.banks.iter().any(|b| b.open.is_some());
        if any_open {
            let c = self
                .earliest(SdramCmd::PrechargeAll, 0)
                .max(self.next_refresh);
            self.issue(SdramCmd::PrechargeAll, c);
        } else {
            self.skip_idle_refreshes(start);
        }
        let c = self.earliest(SdramCmd::Refresh, 0).max(self.next_refresh);
        self.issue(SdramCmd::Refresh, c);
    }

    /// With every bank idle and nothing holding the next refresh back, refreshes land
    /// exactly on their due cycles; all but the last one due before `start` are applied
    /// in one step (the state after them is what per-cycle stepping would give).
    fn skip_idle_refreshes(&mut self, start: u64) {
        let interval = self.p.refresh_interval.0.max(1);
        let due = self.next_refresh;
        if self.earliest(SdramCmd::Refresh, 0) > due || start <= due {
            return;
        }
        // Refreshes due at due, due + i, ... up to start - 1; keep the last for the caller.
        let n = (start - 1 - due) / interval + 1;
        if n < 2 {
            return;
        }
        let last_skipped = due + (n - 2) * interval;
        if let Some(log) = self.log.as_mut() {
            log.extend((0..n - 1).map(|k| CmdRecord {
                cycle: due + k * interval,
                cmd: SdramCmd::Refresh,
            }));
        }
        let rfc = self.p.t_rfc.0;
        for b in &mut self.banks {
            b.act_ready = b.act_ready.max(last_skipped.saturating_add(rfc));
        }
        self.ref_ready = last_skipped.saturating_add(rfc);
        self.last_cmd = Some(last_skipped);
        self.next_refresh = last_skipped.saturating_add(interval);
        self.refreshes += n - 1;
    }
}
