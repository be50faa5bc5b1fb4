//! MPI message matching ([`Matcher`]): the queue of posted receives and the queue of
//! unexpected messages, and the rule that pairs them.
//!
//! MPI 1.1 section 3.5 (non-overtaking): if a sender sends two messages in succession to
//! the same destination and both match the same receive, the receive cannot take the
//! second while the first is pending; if a receiver posts two receives in succession and
//! both match the same message, the second cannot take it while the first is pending.
//! Both follow from two FIFO searches, given that messages from one sender arrive in the
//! order they were sent (a VI delivers in order at every reliability level):
//!
//! - an arriving message takes the **oldest** posted receive whose pattern matches it,
//!   or waits at the tail of the unexpected queue;
//! - a new receive takes the **oldest** unexpected message it matches, or waits at the
//!   tail of the posted queue.
//!
//! The queues are generic over what the caller keeps with each entry (a request, a
//! buffer), so the rule is tested here without a network.

use crate::types::{Envelope, Pattern};
use std::collections::VecDeque;

/// Posted receives and unexpected messages of one process.
#[derive(Debug)]
pub struct Matcher<R, U> {
    posted: VecDeque<(Pattern, R)>,
    unexpected: VecDeque<(Envelope, U)>,
}

impl<R, U> Default for Matcher<R, U> {
    fn default() -> Self {
        Matcher {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
        }
    }
}

impl<R, U> Matcher<R, U> {
    /// An empty matcher.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A message with envelope `env` arrived (`u`: what the caller keeps of it). Returns
    /// the oldest posted receive it matches, removed from the posted queue, with `u`
    /// handed back; or `None` when it was queued as unexpected.
    pub fn arrive(&mut self, env: Envelope, u: U) -> Option<(Pattern, R, U)> {
        match self.posted.iter().position(|(p, _)| p.matches(&env)) {
            Some(i) => {
                let (p, r) = self.posted.remove(i)?;
                Some((p, r, u))
            }
            None => {
                self.unexpected.push_back((env, u));
                None
            }
        }
    }

    /// A receive with pattern `pat` was posted (`r`: what the caller keeps of it).
    /// Returns the oldest unexpected message it matches, removed, with `r` handed back;
    /// or `None` when the receive was queued as posted.
    pub fn post(&mut self, pat: Pattern, r: R) -> Option<(Envelope, U, R)> {
        match self.unexpected.iter().position(|(e, _)| pat.matches(e)) {
            Some(i) => {
                let (e, u) = self.unexpected.remove(i)?;
                Some((e, u, r))
            }
            None => {
                self.posted.push_back((pat, r));
                None
            }
        }
    }

    /// The envelope of the oldest unexpected message `pat` matches, left queued
    /// (`MPI_Iprobe`).
    #[must_use]
    pub fn probe(&self, pat: &Pattern) -> Option<&Envelope> {
        self.unexpected
            .iter()
            .map(|(e, _)| e)
            .find(|e| pat.matches(e))
    }

    /// Posted receives still waiting.
    #[must_use]
    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }

    /// Unexpected messages still waiting.
    #[must_use]
    pub fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Context, Rank, Source, Tag, TagSel};
    use proptest::prelude::*;

    fn env(src: u16, tag: i32, seq: u32) -> (Envelope, u32) {
        let e = Envelope {
            src: Rank(src),
            tag: Tag(tag),
            ctx: Context::WORLD,
            len: 0,
        };
        (e, seq)
    }

    fn pat(src: Option<u16>, tag: Option<i32>) -> Pattern {
        Pattern {
            src: src.map_or(Source::Any, |s| Source::Rank(Rank(s))),
            tag: tag.map_or(TagSel::Any, |t| TagSel::Tag(Tag(t))),
            ctx: Context::WORLD,
        }
    }

    #[test]
    fn a_message_takes_the_oldest_matching_receive() {
        let mut m: Matcher<&str, u32> = Matcher::new();
        assert!(m.post(pat(Some(1), Some(5)), "r0").is_none());
        assert!(m.post(pat(None, None), "r1").is_none());
        assert!(m.post(pat(Some(2), None), "r2").is_none());
        let (e, u) = env(2, 9, 100);
        let (_, r, back) = m.arrive(e, u).expect("matches r1");
        assert_eq!((r, back), ("r1", 100));
        let (e, u) = env(2, 9, 101);
        assert_eq!(m.arrive(e, u).map(|x| x.1), Some("r2"));
        let (e, u) = env(1, 6, 102);
        assert!(m.arrive(e, u).is_none(), "r0 wants tag 5");
        assert_eq!(m.unexpected_len(), 1);
        assert_eq!(m.posted_len(), 1);
    }

    #[test]
    fn a_receive_takes_the_oldest_matching_message_and_probe_leaves_it() {
        let mut m: Matcher<&str, u32> = Matcher::new();
        for (i, (s, t)) in [(1, 5), (2, 5), (1, 6), (1, 5)].into_iter().enumerate() {
            let (e, u) = env(s, t, i as u32);
            assert!(m.arrive(e, u).is_none());
        }
        assert_eq!(m.probe(&pat(Some(1), Some(6))).map(|e| e.tag), Some(Tag(6)));
        assert_eq!(m.unexpected_len(), 4);
        assert_eq!(m.post(pat(Some(1), None), "a").map(|x| x.1), Some(0));
        assert_eq!(m.post(pat(None, Some(5)), "b").map(|x| x.1), Some(1));
        assert_eq!(m.post(pat(Some(1), Some(5)), "c").map(|x| x.1), Some(3));
        assert_eq!(m.post(pat(None, None), "d").map(|x| x.1), Some(2));
        assert!(m.post(pat(None, None), "e").is_none());
        let collective = Pattern {
            ctx: Context::WORLD_COLLECTIVE,
            ..pat(None, None)
        };
        let (e, u) = env(1, 5, 9);
        assert_eq!(m.arrive(e, u).map(|x| x.1), Some("e"));
        assert!(m.post(collective, "f").is_none());
    }

    proptest! {
        /// Non-overtaking (MPI 1.1 section 3.5) under any interleaving of arrivals and
        /// posts: among messages of one sender that one receive pattern would match, the
        /// receives taking them were posted in the order the messages were sent, and
        /// every message ends matched or queued exactly once.
        #[test]
        fn no_message_overtakes_another_from_the_same_sender(
            steps in proptest::collection::vec(
                (any::<bool>(), 0u16..3, 0i32..3, any::<bool>(), any::<bool>()), 1..80)
        ) {
            let mut m: Matcher<u32, (u16, u32)> = Matcher::new();
            let mut sent = [0u32; 3];
            let mut posts = 0u32;
            // (receive number, pattern, (sender, sender's sequence number)) per match.
            let mut matched: Vec<(u32, Pattern, (u16, u32))> = Vec::new();
            for (is_msg, src, tag, any_src, any_tag) in steps {
                if is_msg {
                    let seq = sent[usize::from(src)];
                    sent[usize::from(src)] += 1;
                    let (e, _) = env(src, tag, seq);
                    if let Some((p, r, u)) = m.arrive(e, (src, seq)) {
                        matched.push((r, p, u));
                    }
                } else {
                    let p = pat((!any_src).then_some(src), (!any_tag).then_some(tag));
                    if let Some((_, u, r)) = m.post(p, posts) {
                        matched.push((r, p, u));
                    }
                    posts += 1;
                }
            }
            let total: u32 = sent.iter().sum();
            prop_assert_eq!(matched.len() + m.unexpected_len(), total as usize);
            prop_assert_eq!(matched.len() + m.posted_len(), posts as usize);
            // Two messages of one sender taken by receives whose patterns both accept
            // either (same tag or wildcards): the earlier message went to the earlier
            // receive.
            for a in &matched {
                for b in &matched {
                    let same_sender = a.2 .0 == b.2 .0;
                    if same_sender && a.2 .1 < b.2 .1 && a.1 == b.1 {
                        prop_assert!(a.0 < b.0, "message {:?} overtook {:?}", b, a);
                    }
                }
            }
        }
    }
}
