//! The forms a query is screened in (issue #30, issue 43): every way a person may read
//! what was typed, each normalised and scored against the whole list, the best kept per entry.
//!
//! - **Spellings:** the name as typed; in display order when it holds bidirectional controls
//!   ([`crate::display`], UAX #9); and each of these with its look-alike letters read as the
//!   Latin ones they imitate ([`crate::lookalike`], UTS #39).
//! - **Punctuation:** each spelling split at punctuation inside words and joined across it
//!   ([`normalize`], [`normalize_joined`]).
//! - **Run-together words:** each form with its tokens that are several list tokens run
//!   together split into them ([`Screener::segmented`]).
//!
//! A plain Latin name without inner punctuation or run-together words has one form, so the
//! extra forms cost only the names that carry what they undo. The watchlist's names get the
//! same look-alike spellings once, when the index is built ([`Screener::new`]).

use crate::display::display_order;
use crate::lookalike::lookalikes;
use crate::normalize::{self, NormalizedName, from_folded, normalize, normalize_joined};
use crate::request::ValidRequest;

use super::Screener;

/// Shortest query token tried as run-together words, and shortest piece it splits into.
const MIN_RUN_TOGETHER: usize = 5;
/// Shortest piece of a run-together token (`al` in `altamimi`).
const MIN_PIECE: usize = 2;
/// Longest query token tried as run-together words (bounds the quadratic split).
const MAX_RUN_TOGETHER: usize = 64;

impl Screener {
    /// The forms a query is scored in (module doc), duplicates left out: the name as typed,
    /// then in display order ([`display_order`]), then each of these in its look-alike
    /// spellings ([`lookalikes`]); each of those split and joined; and each form so far with
    /// its run-together tokens segmented. A form longer than the name may be
    /// ([`normalize::oversize`]) is left out.
    pub(super) fn forms(&self, request: &ValidRequest) -> Vec<NormalizedName> {
        let mut spellings = vec![request.name.clone()];
        spellings.extend(display_order(&request.name));
        for i in 0..spellings.len() {
            for other in spellings.get(i).map(|s| lookalikes(s)).unwrap_or_default() {
                if !spellings.contains(&other) {
                    spellings.push(other);
                }
            }
        }
        let mut forms = vec![request.query.clone()];
        for (i, spelling) in spellings.iter().enumerate() {
            let split = (i > 0).then(|| normalize(spelling));
            for form in split.into_iter().chain([normalize_joined(spelling)]) {
                if !form.is_empty()
                    && normalize::oversize(&form).is_none()
                    && !forms.contains(&form)
                {
                    forms.push(form);
                }
            }
        }
        for i in 0..forms.len() {
            if let Some(split) = forms.get(i).and_then(|f| self.segmented(f))
                && !forms.contains(&split)
            {
                forms.push(split);
            }
        }
        forms
    }

    /// `name` with each token that is not a list token but is several list tokens run
    /// together (`nabilsamirhaddad`, `altamimi`, `stonebrookresourcesllp`) replaced by them:
    /// the split into the fewest pieces of at least [`MIN_PIECE`] letters, each a vocabulary
    /// token or a stop token (a legal form or an honorific, then dropped as usual), at least
    /// one of them a vocabulary token that is not a particle. `None` when no token splits so.
    #[must_use]
    pub fn segmented(&self, name: &NormalizedName) -> Option<NormalizedName> {
        let mut changed = false;
        let mut texts = Vec::with_capacity(name.tokens.len());
        for t in &name.tokens {
            match self.split_run_together(&t.text) {
                Some(pieces) => {
                    changed = true;
                    texts.extend(pieces);
                }
                None => texts.push(t.text.clone()),
            }
        }
        changed.then(|| from_folded(texts))
    }

    /// The pieces of `text` (see [`Screener::segmented`]), by dynamic programming over its
    /// prefixes: `fewest[i]` is the fewest pieces `text[..i]` splits into.
    fn split_run_together(&self, text: &str) -> Option<Vec<String>> {
        let n = text.len();
        if !(MIN_RUN_TOGETHER..=MAX_RUN_TOGETHER).contains(&n) || self.ids.contains_key(text) {
            return None;
        }
        let mut fewest: Vec<Option<(usize, usize)>> = vec![None; n + 1]; // (pieces, start)
        fewest[0] = Some((0, 0));
        for end in MIN_PIECE..=n {
            for start in 0..=end - MIN_PIECE {
                let (Some((pieces, _)), Some(piece)) = (fewest[start], text.get(start..end)) else {
                    continue;
                };
                let known = self.ids.contains_key(piece) || normalize::is_stop_token(piece);
                if known && fewest[end].is_none_or(|(best, _)| pieces + 1 < best) {
                    fewest[end] = Some((pieces + 1, start));
                }
            }
        }
        let mut pieces = Vec::new();
        let mut end = n;
        while end > 0 {
            let (_, start) = fewest[end]?;
            pieces.push(text.get(start..end)?.to_owned());
            end = start;
        }
        pieces.reverse();
        let significant = pieces.iter().any(|p| {
            self.ids.contains_key(p.as_str())
                && !normalize::is_particle(p)
                && !normalize::is_stop_token(p)
        });
        (pieces.len() >= 2 && significant).then_some(pieces)
    }
}
