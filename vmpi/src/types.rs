//! The names MPI gives the parties of a message: ranks, tags, communicator contexts, and
//! the selectors a receive may use in their place (`MPI_ANY_SOURCE`, `MPI_ANY_TAG`).

use std::fmt;

/// A process's rank in `MPI_COMM_WORLD` (0 .. size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(pub u16);

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}", self.0)
    }
}

/// A message tag: 0 ..= [`Tag::UB`] (MPI 1.1 section 3.2.3: at least 32767; this
/// library allows the whole non-negative `i32` range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(pub i32);

impl Tag {
    /// The largest tag (`MPI_TAG_UB`).
    pub const UB: Tag = Tag(i32::MAX);

    /// Whether a user may send with this tag (non-negative).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.0 >= 0
    }
}

/// Which communication space a message belongs to. MPI keeps a communicator's
/// point-to-point traffic and its collectives apart (MPI 1.1 section 4.2: a collective
/// never matches a point-to-point receive), so each has its own context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Context(pub u16);

impl Context {
    /// Point-to-point on `MPI_COMM_WORLD`.
    pub const WORLD: Context = Context(0);
    /// Collectives on `MPI_COMM_WORLD`.
    pub const WORLD_COLLECTIVE: Context = Context(1);
}

/// The source a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Only this rank.
    Rank(Rank),
    /// Any rank (`MPI_ANY_SOURCE`).
    Any,
}

/// The tag a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagSel {
    /// Only this tag.
    Tag(Tag),
    /// Any tag (`MPI_ANY_TAG`).
    Any,
}

/// What a message says of itself: who sent it, with which tag, in which context, how
/// long it is (MPI's "envelope", MPI 1.1 section 3.2.3, plus the length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// The sender.
    pub src: Rank,
    /// Its tag.
    pub tag: Tag,
    /// Its communication space.
    pub ctx: Context,
    /// Its length \[bytes\].
    pub len: u32,
}

/// What a receive accepts: a source, a tag, a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pattern {
    /// The source, or any.
    pub src: Source,
    /// The tag, or any.
    pub tag: TagSel,
    /// The context (never a wildcard).
    pub ctx: Context,
}

impl Pattern {
    /// Whether a message with envelope `e` matches this receive.
    #[must_use]
    pub fn matches(&self, e: &Envelope) -> bool {
        let src = match self.src {
            Source::Any => true,
            Source::Rank(r) => r == e.src,
        };
        let tag = match self.tag {
            TagSel::Any => true,
            TagSel::Tag(t) => t == e.tag,
        };
        src && tag && self.ctx == e.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_any_source_or_tag_but_never_another_context() {
        let e = Envelope {
            src: Rank(3),
            tag: Tag(7),
            ctx: Context::WORLD,
            len: 4,
        };
        let p = |src, tag, ctx| Pattern { src, tag, ctx };
        let w = Context::WORLD;
        assert!(p(Source::Rank(Rank(3)), TagSel::Tag(Tag(7)), w).matches(&e));
        assert!(p(Source::Any, TagSel::Tag(Tag(7)), w).matches(&e));
        assert!(p(Source::Rank(Rank(3)), TagSel::Any, w).matches(&e));
        assert!(p(Source::Any, TagSel::Any, w).matches(&e));
        assert!(!p(Source::Rank(Rank(2)), TagSel::Any, w).matches(&e));
        assert!(!p(Source::Any, TagSel::Tag(Tag(8)), w).matches(&e));
        assert!(!p(Source::Any, TagSel::Any, Context::WORLD_COLLECTIVE).matches(&e));
        assert!(Tag(0).is_valid() && Tag::UB.is_valid() && !Tag(-1).is_valid());
        assert_eq!(Rank(5).to_string(), "rank 5");
    }
}
