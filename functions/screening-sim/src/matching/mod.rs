//! Screening a name against the watchlist (SPEC §4 `POST /v1/screen`, issue 12 "Name matching
//! that a compliance analyst would accept").
//!
//! **What is scored, and why.** Each entry's score is the best [name score](align) over its
//! primary name and aliases (a Cyrillic query meets the Cyrillic alias, a Latin variant the
//! Latin one), then moved by [date of birth and country](evidence). An entry is a match when
//! its score, rounded to 4 decimals, is at or above the threshold (default
//! [`DEFAULT_THRESHOLD`], 0.85, issue 12). The answer is `potential_match` with the matches
//! best first (ties by id), at most [`MatchConfig::max_matches`] of them, or `clear` with none.
//! The scoring is token based because names are: reordering, dropped middle names and
//! alternative spellings change tokens, not characters. Within a token, Jaro–Winkler rewards
//! the shared prefixes that spellings of one name keep (Mohammed / Mohamed, Ivanov /
//! Ivanoff) and Double Metaphone the shared sound (Qasim / Kassem), while names that share
//! only a prefix (Milica / Milan) are kept apart; see [`align`].
//!
//! **Forms of the query (issue #30, issue 43).** Punctuation inside a word is sometimes part
//! of the name (`Al-Tamimi`, `O'Brien`) and sometimes put there to break a listed name up
//! (`Na-bil Sa-mir Had-dad`); words are sometimes run together (`NabilSamirHaddad`,
//! `Altamimi`); letters of another script that look Latin (`Nаbіl` with Cyrillic `а`, `і`)
//! and text reversed under a bidi override are read by a person as the Latin name. So a query
//! is scored in several [forms](forms) and each entry keeps its best. A plain name has one
//! form. Invisible characters are dropped before any of this
//! ([`crate::normalize::is_ignorable`]).
//!
//! **Initials (SPEC §4).** A name given with initials (`B. A. Kulikov`) matches a name whose
//! other tokens it carries exactly and whose tokens start with the initials, at a lower score
//! ([`align`]).
//!
//! **Speed.** The watchlist's names are normalised once when the [`Screener`] is built, in
//! their own spelling and in their look-alike spellings ([`crate::lookalike`]), and
//! their tokens interned into a vocabulary of distinct tokens with posting lists. A request
//! compares each query token with each distinct token once (not with every name), then
//! aligns only the names that share at least one pairing token. See
//! `benches/screen.rs` for the figures.

pub mod align;
pub mod evidence;
mod forms;

use std::collections::HashMap;
use std::sync::LazyLock;

use time::Date;

use crate::error::ScreenError;
use crate::lookalike::lookalikes;
use crate::normalize::{self, normalize};
use crate::request::ValidRequest;
use crate::watchlist::{EntryKind, Watchlist};
use align::{AlignToken, Sound, name_score, similarity, sound};

/// The default `potential_match` threshold (issue 12).
pub const DEFAULT_THRESHOLD: f64 = 0.85;
/// The default cap on returned matches.
pub const DEFAULT_MAX_MATCHES: usize = 10;

/// Matcher settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchConfig {
    /// Lowest score that is a match, in (0, 1]; default 0.85.
    pub threshold: f64,
    /// Most matches returned, at least 1; default 10. SPEC §4 does not cap the list; a cap
    /// keeps a very common name from returning hundreds of entries, and the best ones come
    /// first.
    pub max_matches: usize,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            threshold: DEFAULT_THRESHOLD,
            max_matches: DEFAULT_MAX_MATCHES,
        }
    }
}

impl MatchConfig {
    /// Settings with this threshold and the default cap.
    ///
    /// # Errors
    /// [`ScreenError::InvalidConfig`] unless `0 < threshold <= 1`.
    pub fn with_threshold(threshold: f64) -> Result<Self, ScreenError> {
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(ScreenError::InvalidConfig {
                setting: "threshold",
                message: format!("must be in (0, 1], got {threshold}"),
            });
        }
        Ok(MatchConfig {
            threshold,
            ..MatchConfig::default()
        })
    }
}

// The answer's types are the contract's (`{status, matches}`, SPEC §4): the simulator serves
// exactly what its clients decode.
pub use kosha_contract::screening::{ScreenMatch, ScreenResponse, ScreenStatus};

/// An entry's data the scorer needs after the names are indexed.
#[derive(Debug, Clone)]
struct EntryInfo {
    id: String,
    name: String,
    kind: EntryKind,
    country: &'static str,
    date_of_birth: Option<Date>,
}

/// One indexed name (primary or alias) of an entry.
#[derive(Debug, Clone)]
struct IndexedName {
    entry: usize,
    tokens: Vec<AlignToken>,
}

/// The watchlist, normalised and indexed for screening. Cheap to share (`&` or `Arc`);
/// screening takes `&self` and keeps no state between requests.
#[derive(Debug, Clone)]
pub struct Screener {
    config: MatchConfig,
    entries: Vec<EntryInfo>,
    names: Vec<IndexedName>,
    /// Distinct tokens of all names: text, whether a particle, Double Metaphone codes.
    vocab: Vec<(String, bool, Sound)>,
    /// For each vocabulary token, the names (indices into `names`) that contain it.
    postings: Vec<Vec<u32>>,
    /// Vocabulary id of each token text.
    ids: HashMap<String, u32>,
}

static BUNDLED: LazyLock<Screener> =
    LazyLock::new(|| Screener::new(Watchlist::bundled(), MatchConfig::default()));

impl Screener {
    /// Indexes `watchlist`: normalises every name once, in its own and its look-alike
    /// spellings (about 10 ms for the bundled list).
    #[must_use]
    pub fn new(watchlist: &Watchlist, config: MatchConfig) -> Self {
        let mut vocab: Vec<(String, bool, Sound)> = Vec::new();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut postings: Vec<Vec<u32>> = Vec::new();
        let mut names = Vec::new();
        let mut entries = Vec::with_capacity(watchlist.len());
        for (entry, e) in watchlist.entries().iter().enumerate() {
            entries.push(EntryInfo {
                id: e.id.clone(),
                name: e.name.clone(),
                kind: e.kind,
                country: e.country,
                date_of_birth: e.date_of_birth,
            });
            for raw in e.names() {
                let mut spellings = vec![normalize(raw)];
                for other in lookalikes(raw).iter().map(|s| normalize(s)) {
                    if !spellings.contains(&other) {
                        spellings.push(other);
                    }
                }
                for name in spellings {
                    let name_index = u32::try_from(names.len()).unwrap_or(u32::MAX);
                    let mut tokens = Vec::new();
                    for t in name.tokens {
                        let id = *ids.entry(t.text.clone()).or_insert_with(|| {
                            vocab.push((t.text.clone(), t.particle, sound(&t.text)));
                            postings.push(Vec::new());
                            u32::try_from(vocab.len() - 1).unwrap_or(u32::MAX)
                        });
                        if let Some(list) = postings.get_mut(id as usize)
                            && list.last() != Some(&name_index)
                        {
                            list.push(name_index);
                        }
                        tokens.push(AlignToken {
                            id,
                            weight: t.weight,
                            particle: t.particle,
                            initial: t.text.len() == 1,
                        });
                    }
                    if !tokens.is_empty() {
                        names.push(IndexedName { entry, tokens });
                    }
                }
            }
        }
        Screener {
            config,
            entries,
            names,
            vocab,
            postings,
            ids,
        }
    }

    /// The bundled watchlist with the default settings, built on first use.
    #[must_use]
    pub fn bundled() -> &'static Screener {
        &BUNDLED
    }

    /// The settings in force.
    #[must_use]
    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    /// Screens a validated request (see the module doc for what is scored).
    #[must_use]
    pub fn screen(&self, request: &ValidRequest) -> ScreenResponse {
        let forms = self.forms(request);
        // Each distinct query token text gets one row of similarities against the
        // vocabulary, shared by every form that has it.
        let mut rows: Vec<&str> = Vec::new();
        let aligned: Vec<Vec<AlignToken>> = forms
            .iter()
            .map(|form| {
                form.tokens
                    .iter()
                    .map(|t| {
                        let row = rows.iter().position(|r| *r == t.text).unwrap_or_else(|| {
                            rows.push(&t.text);
                            rows.len() - 1
                        });
                        AlignToken {
                            id: u32::try_from(row).unwrap_or(u32::MAX),
                            weight: t.weight,
                            particle: t.particle,
                            initial: t.text.len() == 1,
                        }
                    })
                    .collect()
            })
            .collect();
        let width = self.vocab.len();
        let mut sims = vec![0.0_f64; rows.len() * width];
        let mut pairing: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
        for (qi, text) in rows.iter().enumerate() {
            let (q_particle, q_sound) = (normalize::is_particle(text), sound(text));
            for (vi, (v_text, particle, v_sound)) in self.vocab.iter().enumerate() {
                if *particle != q_particle && text.len() != 1 {
                    continue;
                }
                let s = similarity(text, &q_sound, v_text, v_sound);
                if s > 0.0 {
                    sims[qi * width + vi] = s;
                    pairing[qi].push(vi);
                }
            }
        }
        let mut best: HashMap<usize, f64> = HashMap::new();
        for q_align in &aligned {
            let mut candidate = vec![false; self.names.len()];
            for t in q_align {
                for &vi in pairing.get(t.id as usize).map(Vec::as_slice).unwrap_or(&[]) {
                    for &n in self.postings.get(vi).map(Vec::as_slice).unwrap_or(&[]) {
                        if let Some(c) = candidate.get_mut(n as usize) {
                            *c = true;
                        }
                    }
                }
            }
            for (name, _) in self.names.iter().zip(&candidate).filter(|(_, c)| **c) {
                let s = name_score(q_align, &name.tokens, |q, n| {
                    sims.get(q.id as usize * width + n.id as usize)
                        .copied()
                        .unwrap_or(0.0)
                });
                if s > 0.0 {
                    let slot = best.entry(name.entry).or_insert(0.0);
                    *slot = slot.max(s);
                }
            }
        }
        let mut matches: Vec<ScreenMatch> = best
            .into_iter()
            .filter_map(|(entry, name_score)| {
                let e = self.entries.get(entry)?;
                let delta = evidence::adjustment(
                    e.kind,
                    e.country,
                    e.date_of_birth,
                    request.country,
                    request.date_of_birth,
                );
                let score = round4((name_score + delta).clamp(0.0, 1.0));
                (score >= self.config.threshold).then(|| ScreenMatch {
                    list_entry_id: e.id.clone(),
                    name: e.name.clone(),
                    score,
                })
            })
            .collect();
        matches.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.list_entry_id.cmp(&b.list_entry_id))
        });
        matches.truncate(self.config.max_matches.max(1));
        let status = if matches.is_empty() {
            ScreenStatus::Clear
        } else {
            ScreenStatus::PotentialMatch
        };
        ScreenResponse { status, matches }
    }
}

/// Rounds to 4 decimals, so the threshold is compared with the score the caller sees.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
