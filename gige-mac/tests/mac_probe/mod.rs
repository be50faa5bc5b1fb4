//! The wiring of the one-MAC tests: a DP83820 MAC side at id 0 and a probe at id 1 that
//! is both its bus side and the far end of its link, recording what it receives. A
//! message of the wrong kind (none: both take every `MacMsg`) or to an id with no
//! component fails the test.

#![allow(dead_code)]

use gige_mac::{Dp83820Mac, MacMsg};
use sim_kernel::{ComponentId, Ctx, OnMisroute, Part, Time, Wiring};

/// The two components.
pub enum Comp {
    Mac(Box<Dp83820Mac>),
    /// What the probe received: (when, message).
    Probe(Vec<(Time, MacMsg)>),
}

impl Part<MacMsg, ()> for Comp {
    fn take(&mut self, msg: MacMsg, ctx: &mut Ctx<'_, MacMsg>, (): &mut ()) -> Option<MacMsg> {
        match self {
            Comp::Mac(m) => m.handle(msg, ctx),
            Comp::Probe(got) => got.push((ctx.now(), msg)),
        }
        None
    }
}

/// The MAC at id 0, the probe at id 1.
pub type W = Wiring<Comp>;

/// The world of `mac` (registered first) and the probe (second).
pub fn world(mac: Dp83820Mac) -> W {
    Wiring::of(
        vec![Comp::Mac(Box::new(mac)), Comp::Probe(Vec::new())],
        (),
        OnMisroute::Panic,
    )
}

/// The parts of a [`W`].
pub trait MacAndProbe {
    fn mac(&self) -> &Dp83820Mac;
    fn mac_mut(&mut self) -> &mut Dp83820Mac;
    fn got(&self) -> &[(Time, MacMsg)];
}

impl MacAndProbe for W {
    fn mac(&self) -> &Dp83820Mac {
        match self.get(ComponentId(0)) {
            Some(Comp::Mac(m)) => m,
            _ => panic!("no MAC at id 0"),
        }
    }

    fn mac_mut(&mut self) -> &mut Dp83820Mac {
        match self.get_mut(ComponentId(0)) {
            Some(Comp::Mac(m)) => m,
            _ => panic!("no MAC at id 0"),
        }
    }

    fn got(&self) -> &[(Time, MacMsg)] {
        match self.get(ComponentId(1)) {
            Some(Comp::Probe(g)) => g,
            _ => panic!("no probe at id 1"),
        }
    }
}
