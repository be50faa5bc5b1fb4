//! The point-to-point protocol of one process, as a core that performs no I/O
//! ([`P2p`]): user calls (`isend`, `irecv`) and what the network brought (`arrived`,
//! `recv_registered`, `write_landed`, `write_done`) go in; [`Action`]s for the VIPL
//! layer come out of [`P2p::poll_action`], in order.
//!
//! ```text
//!  eager (len <= eager_limit)        synchronous (len > eager_limit)
//!  sender          receiver          sender                 receiver
//!  copy to bounce                     RTS(tag, len, send) -->  match a receive
//!  Send(hdr+data) -->  match:                                  register its buffer
//!                      posted: copy  <-- CTS(va, handle, len, recv)
//!                      else: stash   register, RDMA write data
//!                      (copy later)  + immediate(recv) ------>  receive done
//! ```
//!
//! Every message, the RDMA write with immediate data included, consumes one of the
//! receiver's pre-posted eager buffers, so every one spends a credit ([`Credits`]);
//! messages wait in a per-peer queue, in order, while credits are short. A send whose
//! data was copied into a bounce buffer is complete for MPI (its buffer may be reused);
//! a synchronous send is complete when its RDMA write has completed locally.

use crate::credits::{CreditError, Credits};
use crate::matching::Matcher;
use crate::types::{Context, Envelope, Pattern, Rank, Tag};
use crate::wire::{Header, Kind};
use std::collections::VecDeque;

/// A send request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SendId(pub u32);

/// A receive request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecvId(pub u32);

/// An eager message that arrived before its receive, copied out of its bounce buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StashId(pub u32);

/// Parameters of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct P2pParams {
    /// This process.
    pub rank: Rank,
    /// Processes in `MPI_COMM_WORLD`.
    pub size: u16,
    /// Largest message sent eagerly \[bytes\].
    pub eager_limit: u32,
    /// Eager receive buffers posted per peer.
    pub buffers: u16,
    /// Owed credits at which a credit message goes on its own.
    pub credit_threshold: u16,
}

/// Why the protocol refuses a call or a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum P2pError {
    /// The credit parameters.
    #[error(transparent)]
    Credits(#[from] CreditError),
    /// A rank outside the world (or this process, where a peer is needed).
    #[error("{0} is not a peer of this process")]
    Rank(Rank),
    /// A negative tag on a send.
    #[error("tag {0} is negative")]
    Tag(i32),
    /// A message names a request this process does not have in that state.
    #[error("a {kind:?} message from {peer} names request {id}, which is not waiting for it")]
    Request {
        /// The message.
        kind: Kind,
        /// Its sender.
        peer: Rank,
        /// The id it named.
        id: u32,
    },
}

/// What became of a receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvStatus {
    /// The sender (`MPI_SOURCE`).
    pub source: Rank,
    /// The tag (`MPI_TAG`).
    pub tag: Tag,
    /// Bytes received (`MPI_Get_count` on `MPI_BYTE`).
    pub len: u32,
    /// The message was longer than the buffer and was cut (`MPI_ERR_TRUNCATE`).
    pub truncated: bool,
}

/// Where the payload of an eager message that just arrived goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Copy it into this receive's buffer (its first `len` bytes), then repost.
    ToRecv(RecvId, u32),
    /// Copy it out to a new stash, then repost.
    Stash(StashId),
    /// Nothing to copy (not an eager message); repost.
    None,
}

/// What the VIPL layer does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send `header` to `peer`; for an eager message, the `header.len` bytes of `data`'s
    /// user buffer follow it (copied into the bounce buffer).
    Send {
        /// To whom.
        peer: Rank,
        /// The header.
        header: Header,
        /// The send whose data follows (eager only).
        data: Option<SendId>,
    },
    /// Register the buffer of `recv` (or find it in the registration cache) and call
    /// [`P2p::recv_registered`].
    RegisterRecv {
        /// The receive.
        recv: RecvId,
    },
    /// Register the buffer of `send` and RDMA-write its first `len` bytes to `va` /
    /// `handle` at `peer`, with immediate data `immediate`; call [`P2p::write_done`]
    /// when the write's descriptor completes.
    RdmaWrite {
        /// To whom.
        peer: Rank,
        /// The send.
        send: SendId,
        /// Target address.
        va: u64,
        /// Target memory handle.
        handle: u32,
        /// Bytes to write.
        len: u32,
        /// Immediate data: the receiver's request id.
        immediate: u32,
    },
    /// Copy the stash into `recv`'s buffer (its first `len` bytes) and free the stash.
    Unstash {
        /// The stash.
        stash: StashId,
        /// The receive.
        recv: RecvId,
        /// Bytes to copy.
        len: u32,
    },
    /// `recv`'s buffer is no longer needed by the network (deregister it, unless
    /// cached).
    ReleaseRecv {
        /// The receive.
        recv: RecvId,
    },
}

#[derive(Clone, Copy, Debug)]
enum SendState {
    /// Waiting in the peer queue (eager) or for its CTS (synchronous).
    Pending,
    /// The RDMA write is posted.
    Writing,
    /// Complete for MPI.
    Done,
}

#[derive(Clone, Copy, Debug)]
struct SendReq {
    peer: Rank,
    env: Envelope,
    state: SendState,
}

#[derive(Clone, Copy, Debug)]
enum RecvState {
    Posted,
    /// Matched the RTS of `env`; registering, then the CTS, then the data.
    Synchronous {
        env: Envelope,
        send_req: u32,
    },
    Done(RecvStatus),
}

#[derive(Clone, Copy, Debug)]
struct RecvReq {
    cap: u32,
    state: RecvState,
}

#[derive(Clone, Copy, Debug)]
enum Unexp {
    Eager(StashId),
    Rts { send_req: u32 },
}

/// A message waiting for a credit.
#[derive(Clone, Copy, Debug)]
enum Out {
    Eager(SendId),
    Rts(SendId),
    Cts {
        recv: RecvId,
        send_req: u32,
        va: u64,
        handle: u32,
    },
    Write {
        send: SendId,
        va: u64,
        handle: u32,
        len: u32,
        recv_req: u32,
    },
}

/// The point-to-point protocol state of one process.
#[derive(Debug)]
pub struct P2p {
    params: P2pParams,
    matcher: Matcher<RecvId, Unexp>,
    credits: Vec<Credits>,
    queues: Vec<VecDeque<Out>>,
    sends: Vec<SendReq>,
    recvs: Vec<RecvReq>,
    next_stash: u32,
    actions: VecDeque<Action>,
}

impl P2p {
    /// A process with nothing sent or posted.
    ///
    /// # Errors
    /// [`P2pError::Credits`] for bad credit parameters; [`P2pError::Rank`] when `rank`
    /// is not below `size`.
    pub fn new(params: P2pParams) -> Result<P2p, P2pError> {
        if params.rank.0 >= params.size {
            return Err(P2pError::Rank(params.rank));
        }
        let c = Credits::new(params.buffers, params.credit_threshold)?;
        let n = usize::from(params.size);
        Ok(P2p {
            params,
            matcher: Matcher::new(),
            credits: vec![c; n],
            queues: vec![VecDeque::new(); n],
            sends: Vec::new(),
            recvs: Vec::new(),
            next_stash: 0,
            actions: VecDeque::new(),
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &P2pParams {
        &self.params
    }

    fn peer_index(&self, r: Rank) -> Result<usize, P2pError> {
        if r.0 < self.params.size && r != self.params.rank {
            Ok(usize::from(r.0))
        } else {
            Err(P2pError::Rank(r))
        }
    }

    /// `MPI_Isend` of `len` bytes to `dst`: eager up to the limit, else synchronous.
    ///
    /// # Errors
    /// [`P2pError::Rank`], [`P2pError::Tag`].
    pub fn isend(
        &mut self,
        dst: Rank,
        tag: Tag,
        ctx: Context,
        len: u32,
    ) -> Result<SendId, P2pError> {
        let p = self.peer_index(dst)?;
        if !tag.is_valid() {
            return Err(P2pError::Tag(tag.0));
        }
        let id = SendId(u32::try_from(self.sends.len()).unwrap_or(u32::MAX));
        let env = Envelope {
            src: self.params.rank,
            tag,
            ctx,
            len,
        };
        self.sends.push(SendReq {
            peer: dst,
            env,
            state: SendState::Pending,
        });
        let out = if len <= self.params.eager_limit {
            Out::Eager(id)
        } else {
            Out::Rts(id)
        };
        self.queues[p].push_back(out);
        self.pump(p);
        Ok(id)
    }

    /// `MPI_Irecv` into a buffer of `cap` bytes.
    ///
    /// # Errors
    /// [`P2pError::Rank`] for a source outside the world.
    pub fn irecv(&mut self, pat: Pattern, cap: u32) -> Result<RecvId, P2pError> {
        if let crate::types::Source::Rank(r) = pat.src {
            self.peer_index(r)?;
        }
        let id = RecvId(u32::try_from(self.recvs.len()).unwrap_or(u32::MAX));
        self.recvs.push(RecvReq {
            cap,
            state: RecvState::Posted,
        });
        if let Some((env, u, id)) = self.matcher.post(pat, id) {
            self.matched(id, env, u);
        }
        Ok(id)
    }

    /// A receive met its message.
    fn matched(&mut self, recv: RecvId, env: Envelope, u: Unexp) {
        let Some(r) = self.recvs.get_mut(recv.0 as usize) else {
            return;
        };
        match u {
            Unexp::Eager(stash) => {
                let st = status(env, r.cap);
                r.state = RecvState::Done(st);
                self.actions.push_back(Action::Unstash {
                    stash,
                    recv,
                    len: st.len,
                });
            }
            Unexp::Rts { send_req } => {
                r.state = RecvState::Synchronous { env, send_req };
                self.actions.push_back(Action::RegisterRecv { recv });
            }
        }
    }

    /// A message from `peer` was reaped from an eager buffer. Returns where its payload
    /// goes; the layer copies it, reposts the buffer, then polls actions.
    ///
    /// # Errors
    /// [`P2pError`] for a message that names no waiting request or comes from no peer;
    /// the buffer is reposted all the same (the message is dropped).
    pub fn arrived(&mut self, peer: Rank, h: &Header) -> Result<Payload, P2pError> {
        let p = self.peer_index(peer)?;
        self.credits[p].returned(h.credits);
        self.credits[p].reposted();
        let env = Envelope {
            src: peer,
            tag: h.tag,
            ctx: h.ctx,
            len: h.len,
        };
        let r = match h.kind {
            Kind::Eager => {
                let stash = StashId(self.next_stash);
                match self.matcher.arrive(env, Unexp::Eager(stash)) {
                    Some((_, recv, _)) => {
                        let cap = self.recvs.get(recv.0 as usize).map_or(0, |r| r.cap);
                        let st = status(env, cap);
                        if let Some(r) = self.recvs.get_mut(recv.0 as usize) {
                            r.state = RecvState::Done(st);
                        }
                        Ok(Payload::ToRecv(recv, st.len))
                    }
                    None => {
                        self.next_stash = self.next_stash.wrapping_add(1);
                        Ok(Payload::Stash(stash))
                    }
                }
            }
            Kind::Rts => {
                let u = Unexp::Rts {
                    send_req: h.send_req,
                };
                if let Some((_, recv, u)) = self.matcher.arrive(env, u) {
                    self.matched(recv, env, u);
                }
                Ok(Payload::None)
            }
            Kind::Cts => self.cts(p, peer, h).map(|()| Payload::None),
            Kind::Credit => Ok(Payload::None),
        };
        self.pump(p);
        self.credit_if_due(p);
        r
    }

    fn cts(&mut self, p: usize, peer: Rank, h: &Header) -> Result<(), P2pError> {
        let bad = P2pError::Request {
            kind: h.kind,
            peer,
            id: h.send_req,
        };
        let Some(s) = self.sends.get_mut(h.send_req as usize) else {
            return Err(bad);
        };
        let synchronous = s.env.len > self.params.eager_limit;
        if s.peer != peer || !matches!(s.state, SendState::Pending) || !synchronous {
            return Err(bad);
        }
        s.state = SendState::Writing;
        let len = s.env.len.min(h.len);
        self.queues[p].push_back(Out::Write {
            send: SendId(h.send_req),
            va: h.va,
            handle: h.handle,
            len,
            recv_req: h.recv_req,
        });
        Ok(())
    }

    /// The buffer of synchronous receive `recv` is registered at `va` / `handle`: the
    /// CTS can go.
    pub fn recv_registered(&mut self, recv: RecvId, va: u64, handle: u32) {
        let Some(r) = self.recvs.get(recv.0 as usize) else {
            return;
        };
        if let RecvState::Synchronous { env, send_req } = r.state {
            if let Ok(p) = self.peer_index(env.src) {
                self.queues[p].push_back(Out::Cts {
                    recv,
                    send_req,
                    va,
                    handle,
                });
                self.pump(p);
            }
        }
    }

    /// An RDMA write with immediate data `immediate` from `peer` completed a receive
    /// descriptor (an eager buffer, no payload): the data of receive `immediate` landed,
    /// the receive is complete. The layer reposts the buffer, then polls actions.
    ///
    /// # Errors
    /// [`P2pError::Request`] when no synchronous receive from `peer` has that id.
    pub fn write_landed(&mut self, peer: Rank, immediate: u32) -> Result<RecvId, P2pError> {
        let p = self.peer_index(peer)?;
        self.credits[p].reposted();
        let recv = RecvId(immediate);
        let out = match self.recvs.get_mut(immediate as usize) {
            Some(r) => match r.state {
                RecvState::Synchronous { env, .. } if env.src == peer => {
                    r.state = RecvState::Done(status(env, r.cap));
                    self.actions.push_back(Action::ReleaseRecv { recv });
                    Ok(recv)
                }
                _ => Err(P2pError::Request {
                    kind: Kind::Cts,
                    peer,
                    id: immediate,
                }),
            },
            None => Err(P2pError::Request {
                kind: Kind::Cts,
                peer,
                id: immediate,
            }),
        };
        self.credit_if_due(p);
        out
    }

    /// The RDMA write of `send` completed locally: the send is complete.
    pub fn write_done(&mut self, send: SendId) {
        if let Some(s) = self.sends.get_mut(send.0 as usize) {
            if matches!(s.state, SendState::Writing) {
                s.state = SendState::Done;
            }
        }
    }

    /// Bytes of the synchronous transfers this process takes part in that are not
    /// complete: its sends above the eager limit, and its receives that matched one.
    #[must_use]
    pub fn pending_synchronous_bytes(&self) -> u64 {
        let sends = self
            .sends
            .iter()
            .filter(|s| s.env.len > self.params.eager_limit && !matches!(s.state, SendState::Done))
            .map(|s| u64::from(s.env.len));
        let recvs = self.recvs.iter().filter_map(|r| match r.state {
            RecvState::Synchronous { env, .. } => Some(u64::from(env.len.min(r.cap))),
            _ => None,
        });
        sends.chain(recvs).sum()
    }

    /// Whether a send is complete (`MPI_Test`).
    #[must_use]
    pub fn send_done(&self, send: SendId) -> bool {
        self.sends
            .get(send.0 as usize)
            .is_some_and(|s| matches!(s.state, SendState::Done))
    }

    /// The envelope of the oldest message that arrived unmatched and `pat` matches
    /// (`MPI_Iprobe`): its source, tag and length, so a buffer can be sized.
    #[must_use]
    pub fn probe(&self, pat: &Pattern) -> Option<Envelope> {
        self.matcher.probe(pat).copied()
    }

    /// A receive's status once complete (`MPI_Test`).
    #[must_use]
    pub fn recv_status(&self, recv: RecvId) -> Option<RecvStatus> {
        match self.recvs.get(recv.0 as usize)?.state {
            RecvState::Done(s) => Some(s),
            _ => None,
        }
    }

    /// The next thing for the layer to do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Credits towards `peer` (available, owed).
    #[must_use]
    pub fn credits(&self, peer: Rank) -> Option<(u16, u16)> {
        let c = self.credits.get(usize::from(peer.0))?;
        Some((c.available(), c.owed()))
    }

    /// Messages waiting for credits towards `peer`.
    #[must_use]
    pub fn queued(&self, peer: Rank) -> usize {
        self.queues
            .get(usize::from(peer.0))
            .map_or(0, VecDeque::len)
    }

    /// Sends the queue's head messages to peer `p` while credits last.
    fn pump(&mut self, p: usize) {
        while let Some(&out) = self.queues[p].front() {
            // An RDMA write carries no header, so owed credits stay owed.
            let credits = if matches!(out, Out::Write { .. }) {
                self.credits[p].spend().map(|()| 0)
            } else {
                self.credits[p].take_for_message()
            };
            let Some(credits) = credits else {
                return;
            };
            self.queues[p].pop_front();
            let peer = Rank(u16::try_from(p).unwrap_or(u16::MAX));
            let me = self.params.rank;
            match out {
                Out::Eager(send) | Out::Rts(send) => {
                    let Some(s) = self.sends.get_mut(send.0 as usize) else {
                        continue;
                    };
                    let eager = matches!(out, Out::Eager(_));
                    let mut h =
                        Header::new(if eager { Kind::Eager } else { Kind::Rts }, me, s.env.ctx);
                    h.credits = credits;
                    h.tag = s.env.tag;
                    h.len = s.env.len;
                    h.send_req = send.0;
                    if eager {
                        s.state = SendState::Done;
                    }
                    self.actions.push_back(Action::Send {
                        peer,
                        header: h,
                        data: eager.then_some(send),
                    });
                }
                Out::Cts {
                    recv,
                    send_req,
                    va,
                    handle,
                } => {
                    let cap = self.recvs.get(recv.0 as usize).map_or(0, |r| r.cap);
                    let mut h = Header::new(Kind::Cts, me, crate::types::Context::WORLD);
                    h.credits = credits;
                    h.len = cap;
                    h.send_req = send_req;
                    h.recv_req = recv.0;
                    h.va = va;
                    h.handle = handle;
                    self.actions.push_back(Action::Send {
                        peer,
                        header: h,
                        data: None,
                    });
                }
                Out::Write {
                    send,
                    va,
                    handle,
                    len,
                    recv_req,
                } => {
                    self.actions.push_back(Action::RdmaWrite {
                        peer,
                        send,
                        va,
                        handle,
                        len,
                        immediate: recv_req,
                    });
                }
            }
        }
    }

    /// After a pump: credits still owed at the threshold could not ride on a message
    /// (none could go), so they go in a credit message, on the reserved credit if need
    /// be; otherwise two processes each waiting for the other's credits would deadlock.
    fn credit_if_due(&mut self, p: usize) {
        if !self.credits[p].credit_message_due() {
            return;
        }
        if let Some(credits) = self.credits[p].take_for_credit_message() {
            let mut h = Header::new(Kind::Credit, self.params.rank, Context::WORLD);
            h.credits = credits;
            self.actions.push_back(Action::Send {
                peer: Rank(u16::try_from(p).unwrap_or(u16::MAX)),
                header: h,
                data: None,
            });
        }
    }
}

/// A receive's status for a message `env` into a buffer of `cap` bytes.
fn status(env: Envelope, cap: u32) -> RecvStatus {
    RecvStatus {
        source: env.src,
        tag: env.tag,
        len: env.len.min(cap),
        truncated: env.len > cap,
    }
}

#[cfg(test)]
mod tests;
