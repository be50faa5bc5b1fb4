//! A small system for the ATT tests: the manager (SDRAM domain, 100 MHz), a client that
//! records every reply with its arrival time (100 MHz), and for the host-memory what-if a
//! fake table port that answers from its own memory after a fixed delay.

use crate::att::{
    AccessKind, AttManager, AttParams, DeregisterError, Piece, RegionRequest, RegisterError,
    TableIoError, TranslateError,
};
use crate::msg::{NicMsg, ReqId};
use crate::sdram::SdramStore;
use sim_kernel::{ClockDomain, ComponentId, Ctx, Cycles, Kernel, MsgId, OnMisroute, Time, Wiring};
use via_abi::{MemHandle, ProtectionTag};

/// 10 ns: one cycle of every domain here.
pub const CYCLE_PS: u64 = 10_000;

/// A table port that serves reads and writes from a sparse memory after `delay` cycles.
pub struct FakePort {
    pub mem: SdramStore,
    pub delay: Cycles,
    /// Every request seen: (arrival time, write?, address, length).
    pub seen: Vec<(Time, bool, u64, u64)>,
    /// Answer reads with a bus error.
    pub fail_reads: bool,
}

impl FakePort {
    /// Answers a table read or write; gives any other message back.
    fn handle(&mut self, msg: NicMsg, ctx: &mut Ctx<'_, NicMsg>) -> Option<NicMsg> {
        match msg {
            NicMsg::AttTableRead {
                tag,
                addr,
                len,
                reply_to,
            } => {
                self.seen.push((ctx.now(), false, addr, len));
                let result = if self.fail_reads {
                    Err(TableIoError::Bus { addr })
                } else {
                    self.mem
                        .read_vec(addr, len as usize)
                        .map_err(|_| TableIoError::OutOfRange { addr, len })
                };
                ctx.send_after(
                    reply_to,
                    self.delay,
                    NicMsg::AttTableReadDone { tag, result },
                );
            }
            NicMsg::AttTableWrite {
                tag,
                addr,
                data,
                reply_to,
            } => {
                self.seen.push((ctx.now(), true, addr, data.len() as u64));
                let result = self
                    .mem
                    .write(addr, &data)
                    .map_err(|_| TableIoError::OutOfRange {
                        addr,
                        len: data.len() as u64,
                    });
                ctx.send_after(
                    reply_to,
                    self.delay,
                    NicMsg::AttTableWriteDone { tag, result },
                );
            }
            other => return Some(other),
        }
        None
    }
}

/// The components of the bench.
pub enum Part {
    Att(Box<AttManager>),
    /// Records every reply with its arrival time.
    Client(Vec<(Time, NicMsg)>),
    Port(FakePort),
}

impl sim_kernel::Part<NicMsg, ()> for Part {
    fn take(&mut self, msg: NicMsg, ctx: &mut Ctx<'_, NicMsg>, (): &mut ()) -> Option<NicMsg> {
        match self {
            Part::Att(a) => a.handle(msg, ctx),
            Part::Client(replies) => replies.push((ctx.now(), msg)),
            Part::Port(p) => return p.handle(msg, ctx),
        }
        None
    }
}

/// The bench's wiring (strict: a message of the wrong kind fails the test).
pub type Bench = Wiring<Part>;

pub const ATT: ComponentId = ComponentId(0);
pub const CLIENT: ComponentId = ComponentId(1);
pub const PORT: ComponentId = ComponentId(2);

pub struct Sys {
    pub k: Kernel<NicMsg>,
    pub b: Bench,
    next_req: u64,
}

impl Sys {
    /// A card ATT with `params`.
    pub fn new(params: AttParams) -> Self {
        Self::build(params, None)
    }

    /// A host-memory ATT whose table port answers after `delay` cycles.
    pub fn host(params: AttParams, delay: u64) -> Self {
        let port = FakePort {
            mem: SdramStore::new(32 << 20),
            delay: Cycles(delay),
            seen: Vec::new(),
            fail_reads: false,
        };
        Self::build(params, Some(port))
    }

    fn build(params: AttParams, port: Option<FakePort>) -> Self {
        let mut k = Kernel::new(true);
        let sdram = k.add_domain(ClockDomain::from_mhz("card.sdram", 100.0).expect("ok"));
        let core = k.add_domain(ClockDomain::from_mhz("client", 100.0).expect("ok"));
        let table_port = port.as_ref().map(|_| PORT);
        let att = AttManager::new(params, table_port).expect("valid params");
        let mut b = Bench::new((), OnMisroute::Panic);
        assert_eq!(b.add(&mut k, "att", sdram, Part::Att(Box::new(att))), ATT);
        assert_eq!(
            b.add(&mut k, "client", core, Part::Client(Vec::new())),
            CLIENT
        );
        if let Some(port) = port {
            assert_eq!(b.add(&mut k, "port", core, Part::Port(port)), PORT);
        }
        Self { k, b, next_req: 0 }
    }

    /// The ATT manager.
    pub fn att(&self) -> &AttManager {
        match self.b.get(ATT) {
            Some(Part::Att(a)) => a,
            _ => panic!("no ATT manager"),
        }
    }

    /// The ATT manager, to change it (fault injection).
    pub fn att_mut(&mut self) -> &mut AttManager {
        match self.b.get_mut(ATT) {
            Some(Part::Att(a)) => a,
            _ => panic!("no ATT manager"),
        }
    }

    /// The replies the client got, in order.
    pub fn replies(&mut self) -> &mut Vec<(Time, NicMsg)> {
        match self.b.get_mut(CLIENT) {
            Some(Part::Client(r)) => r,
            _ => panic!("no client"),
        }
    }

    /// The fake table port (host-memory ATT only).
    pub fn port(&mut self) -> &mut FakePort {
        match self.b.get_mut(PORT) {
            Some(Part::Port(p)) => p,
            _ => panic!("no table port"),
        }
    }

    fn req(&mut self) -> ReqId {
        self.next_req += 1;
        ReqId(self.next_req)
    }

    /// Posts `msg` to the manager at SDRAM cycle `at` (or now, if later) and runs until
    /// idle; returns the reply and the cycle it arrived at the client.
    pub fn call(&mut self, at: u64, msg: NicMsg) -> (u64, NicMsg) {
        self.k.post(ATT, Time(at * CYCLE_PS), msg);
        self.k.run_to_idle(&mut self.b);
        let (t, reply) = self.replies().pop().expect("a reply");
        (t.0 / CYCLE_PS, reply)
    }

    /// The current SDRAM cycle.
    pub fn now(&self) -> u64 {
        self.k.now().0 / CYCLE_PS
    }

    pub fn register_at(
        &mut self,
        at: u64,
        region: RegionRequest,
    ) -> Result<MemHandle, RegisterError> {
        let req = self.req();
        let msg = NicMsg::AttRegister {
            req,
            region,
            reply_to: CLIENT,
        };
        match self.call(at, msg) {
            (_, NicMsg::AttRegistered { req: r, result }) if r == req => result,
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn register(&mut self, region: RegionRequest) -> Result<MemHandle, RegisterError> {
        let now = self.now();
        self.register_at(now, region)
    }

    pub fn deregister(&mut self, handle: MemHandle) -> Result<(), DeregisterError> {
        let req = self.req();
        let msg = NicMsg::AttDeregister {
            req,
            handle,
            reply_to: CLIENT,
        };
        let now = self.now();
        match self.call(now, msg) {
            (_, NicMsg::AttDeregistered { req: r, result }) if r == req => result,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Translates at SDRAM cycle `at`; returns the result and the cycle the reply arrived.
    pub fn translate_at(
        &mut self,
        at: u64,
        handle: MemHandle,
        va: u64,
        len: u64,
        access: AccessKind,
        ptag: ProtectionTag,
    ) -> (Result<Vec<Piece>, TranslateError>, u64) {
        let req = self.req();
        let msg = NicMsg::AttTranslate {
            req,
            msg: MsgId(req.0),
            handle,
            va,
            len,
            access,
            ptag,
            reply_to: CLIENT,
        };
        match self.call(at, msg) {
            (t, NicMsg::AttTranslated { req: r, result }) if r == req => (result, t),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn translate(
        &mut self,
        handle: MemHandle,
        va: u64,
        len: u64,
        access: AccessKind,
        ptag: ProtectionTag,
    ) -> Result<Vec<Piece>, TranslateError> {
        let now = self.now();
        self.translate_at(now, handle, va, len, access, ptag).0
    }

    /// Spans recorded for message `msg` with stage `stage`: (start, end) in cycles.
    pub fn spans(&self, msg: u64, stage: &str) -> Vec<(u64, u64)> {
        self.k
            .trace()
            .spans()
            .iter()
            .filter(|s| s.msg == MsgId(msg) && s.stage == stage)
            .map(|s| (s.start.0 / CYCLE_PS, s.end.0 / CYCLE_PS))
            .collect()
    }

    /// The id the next request will get.
    pub fn next_req_id(&self) -> u64 {
        self.next_req + 1
    }
}
