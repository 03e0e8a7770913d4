//! The name score: how well one query name and one watchlist name agree, token by token.
//!
//! **Token similarity.** Two tokens pair when they are the same name spelt differently, which
//! is decided from two measures that fail in different ways:
//! - Jaro–Winkler (`strsim`) catches typos (Castilo / Castillo, 0.97) but also rates
//!   different names with a shared prefix highly (Milica / Milan 0.88);
//! - Double Metaphone (`rphonetic`, Philips 2000, the name-matching phonetic code) catches
//!   transliterations whose letters differ but whose sound does not (Qasim / Kassem, Yuri /
//!   Iurii, Shaheen / Chahine: Jaro–Winkler 0.70–0.78) and keeps Milica (MLK) from Milan
//!   (MLN), Goran (KRN) from Zoran (SRN).
//!
//! So a pair that sounds alike counts with similarity `max(JW, SOUNDALIKE_SIMILARITY)` when
//! its Jaro–Winkler is at least [`SOUNDALIKE_JW_FLOOR`]; a pair that does not sound alike
//! counts only as a near-typo, with Jaro–Winkler at least [`TYPO_FLOOR`] and at most one edit
//! per four letters ([`typo_edits`]; issue 43: Jaro–Winkler alone rated `Rahimi` / `Ebrahimi`
//! 0.92, so "Mohammad Rahimi" matched "Mohammad Ebrahimi"). Anything else does not pair.
//!
//! **Alignment.** Every query token is paired with at most one name token and the other way
//! round, greedily by descending similarity. Because pairing ignores position, "Smith, John"
//! and "John Smith" align fully. A name particle (`al`, `bin` …) pairs only with a particle,
//! so "Al" never passes for "Ali".
//!
//! **The score** is `quality × (1 − UNMATCHED_PENALTY × unmatched)`, in [0, 1]:
//! - `quality`: the weighted mean similarity of the paired tokens (weights from
//!   [`crate::normalize`]: 1, 0.5 for initials, 0.3 for particles);
//! - `unmatched`: the summed weight of tokens left unpaired on either side. One missing or
//!   extra name part (a patronymic, a middle name, a second surname) costs 0.08 and still
//!   matches at the default threshold ("Sergei Ivanov" against "Sergei Viktorovich Ivanov"
//!   scores 0.92); two cost 0.16 and do not, unless date of birth or country lift the score.
//!
//! **Order.** Order is free while at least one full token pairs exactly; a name whose every
//! pair is only similar must keep its order, because two similar names in swapped roles are
//! another person ("Ahmed Hassan" / "Hossein Ahmadi", issue 43).
//!
//! **When it is zero.** A name of two or more significant tokens (not particles) matches only
//! if at least two of them pair in full (an initial does not count): a surname or a first name
//! alone ("Ivanov", "Mohammed") is not enough to call a person a potential match against a
//! full name, the largest source of false positives in name screening. Single-token names
//! ("Volganeft") need their one token. The one exception is a name given with initials, below.
//!
//! **Initials.** A one-letter token pairs with a token starting with that letter at
//! [`INITIAL_SIMILARITY`], which supports a match ("John R. Smith" ~ "John Robert Smith").
//! A query given with initials (`B. A. Kulikov`, `N S Haddad`, `J. Smith`) also matches when
//! every one of its tokens pairs, every full token exactly (the surname "matches exactly",
//! SPEC §4) and at least one full token is there: its initials stand for the given names
//! they start. Its score is lower than the full name's: `B. A. Kulikov` against `Boris
//! Alekseevich Kulikov` scores 0.93, `B. Kulikov` 0.87 (one given name unpaired).

use rphonetic::DoubleMetaphone;

/// Lowest Jaro–Winkler for a pair that does not sound alike (a near-typo).
pub const TYPO_FLOOR: f64 = 0.88;
/// Lowest Jaro–Winkler for a pair that sounds alike.
pub const SOUNDALIKE_JW_FLOOR: f64 = 0.70;
/// Similarity given to a sound-alike pair whose Jaro–Winkler is lower: just under the
/// default threshold, so one such pair with an exact one matches (0.92) but not with a part
/// missing as well (0.846: "Hussein Mansour" is not "Nasser Hassan Mansour", issue 43).
pub const SOUNDALIKE_SIMILARITY: f64 = 0.84;
/// Score lost per unit of unpaired token weight, on either side.
pub const UNMATCHED_PENALTY: f64 = 0.08;
/// Fewest sounds (Double Metaphone code characters) two tokens must share to sound alike.
pub const MIN_SOUNDS: usize = 2;
/// Similarity of an initial and a token it abbreviates.
pub const INITIAL_SIMILARITY: f64 = 0.9;

/// A token's Double Metaphone codes (primary and alternate, whole).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sound {
    primary: String,
    alternate: String,
}

/// The Double Metaphone codes of a normalised token, whole (empty for digits). Not cut at
/// the usual 4 characters, a length made for indexing: cut, `Aleksei` and `Aleksandrovich`
/// (`ALKS`), `Abdulrahman` and `Abdullah` (`APTL`) sounded alike (issue 43).
#[must_use]
pub fn sound(token: &str) -> Sound {
    let codes = DoubleMetaphone::new(None).double_metaphone(token);
    Sound {
        primary: codes.primary(),
        alternate: codes.alternate(),
    }
}

/// Whether two codes agree, each of at least [`MIN_SOUNDS`] sounds: a one-sound code (`He`
/// and `Ho`, `Zhao` and `Zhou`: `H`, `J`) says too little to call two names one (issue 43).
fn sounds_alike(a: &Sound, b: &Sound) -> bool {
    let same = |x: &String, y: &String| x.len() >= MIN_SOUNDS && x == y;
    let (ap, aa, bp, ba) = (&a.primary, &a.alternate, &b.primary, &b.alternate);
    same(ap, bp) || same(ap, ba) || same(aa, bp) || same(aa, ba)
}

/// Similarity of two normalised tokens in [0, 1], 0 when they do not pair (the module doc's
/// rule). Computes the codes; the screener uses precomputed ones.
#[must_use]
pub fn token_similarity(a: &str, b: &str) -> f64 {
    similarity(a, &sound(a), b, &sound(b))
}

/// [`token_similarity`] with the tokens' codes given.
pub(crate) fn similarity(a: &str, sa: &Sound, b: &str, sb: &Sound) -> f64 {
    if a == b {
        return 1.0;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() == 1 {
        return if long.starts_with(short) {
            INITIAL_SIMILARITY
        } else {
            0.0
        };
    }
    let jw = strsim::jaro_winkler(a, b);
    if jw >= SOUNDALIKE_JW_FLOOR && sounds_alike(sa, sb) {
        jw.max(SOUNDALIKE_SIMILARITY)
    } else if jw >= TYPO_FLOOR && is_typo(short, long) {
        jw
    } else {
        0.0
    }
}

/// Whether `short` is at most [`typo_edits`] edits from `long` (Damerau–Levenshtein): a
/// slip of the keyboard, not another name that contains it or shares its start (`Rahimi` /
/// `Ebrahimi`, `Aleksei` / `Aleksandrovich`, which Jaro–Winkler rates 0.92 and 0.89).
fn is_typo(short: &str, long: &str) -> bool {
    strsim::damerau_levenshtein(short, long) <= typo_edits(short.len())
}

/// Most edits a near-typo of a token of `len` letters may have: one per four letters, at
/// least one.
#[must_use]
pub fn typo_edits(len: usize) -> usize {
    (len / 4).max(1)
}

/// Whether no pair of full tokens is exact and two of them cross (the query's order differs
/// from the name's): two names each only similar and in swapped roles are another person's
/// ("Ahmed Hassan" against "Hossein Ahmadi", issue 43). With one exact pair, order is free
/// ("Ivanov, Sergei").
fn swapped_without_anchor(pairs: &[(usize, usize, f64)]) -> bool {
    let anchored = pairs.iter().any(|(_, _, s)| *s >= 1.0);
    let crossed = pairs.iter().any(|(qa, na, _)| {
        pairs
            .iter()
            .any(|(qb, nb, _)| (qa < qb) != (na < nb) && qa != qb)
    });
    !anchored && crossed
}

/// A token of a watchlist or query name, as the aligner sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AlignToken {
    /// Vocabulary id (watchlist side) or query position (query side).
    pub id: u32,
    /// Weight in (0, 1].
    pub weight: f64,
    /// Whether it is a name particle.
    pub particle: bool,
    /// Whether it is an initial (one letter).
    pub initial: bool,
}

/// Scores `query` against `name`; `sim(q, n)` gives the similarity of query token `q.id`
/// and name token `n.id` (0 when they do not pair).
pub(crate) fn name_score(
    query: &[AlignToken],
    name: &[AlignToken],
    sim: impl Fn(&AlignToken, &AlignToken) -> f64,
) -> f64 {
    let mut pairs: Vec<(f64, usize, usize)> = Vec::with_capacity(query.len() * name.len());
    for (qi, q) in query.iter().enumerate() {
        for (ni, n) in name.iter().enumerate() {
            // A one-letter query token is an initial even when it spells a particle (`Y.`).
            if q.particle != n.particle && !q.initial {
                continue;
            }
            let s = sim(q, n);
            if s > 0.0 {
                pairs.push((s, qi, ni));
            }
        }
    }
    // Best pairs first; ties by position so the result does not depend on sort stability.
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut q_used = vec![false; query.len()];
    let mut n_used = vec![false; name.len()];
    let (mut weighted, mut weights, mut strong) = (0.0, 0.0, 0usize);
    // Whether every full query token paired exactly (the initials rule of the module doc).
    let mut full_exact = true;
    // The pairs of full tokens (query position, name position, similarity).
    let mut full_pairs: Vec<(usize, usize, f64)> = Vec::new();
    for (s, qi, ni) in pairs {
        if q_used[qi] || n_used[ni] {
            continue;
        }
        q_used[qi] = true;
        n_used[ni] = true;
        let w = query[qi].weight.max(name[ni].weight);
        weighted += s * w;
        weights += w;
        let (q, n) = (&query[qi], &name[ni]);
        if !q.particle && !q.initial && !n.initial {
            strong += 1;
        }
        full_exact &= q.initial || q.particle || s >= 1.0;
        if !q.particle && !q.initial && !n.initial {
            full_pairs.push((qi, ni, s));
        }
    }
    if swapped_without_anchor(&full_pairs) {
        return 0.0;
    }
    let significant = |tokens: &[AlignToken]| tokens.iter().filter(|t| !t.particle).count();
    let required = significant(query).max(significant(name)).min(2);
    let by_initials = query.iter().any(|t| t.initial)
        && q_used.iter().all(|used| *used)
        && full_exact
        && strong >= 1;
    if (strong < required && !by_initials) || weights == 0.0 {
        return 0.0;
    }
    let unmatched: f64 = query
        .iter()
        .zip(&q_used)
        .chain(name.iter().zip(&n_used))
        .filter(|(_, used)| !**used)
        .map(|(t, _)| t.weight)
        .sum();
    let quality = weighted / weights;
    (quality * (1.0 - UNMATCHED_PENALTY * unmatched)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::{Token, normalize};

    /// Scores two raw names with the real normaliser and similarity.
    fn score(q: &str, n: &str) -> f64 {
        let (q, n) = (normalize(q).tokens, normalize(n).tokens);
        let to_align = |ts: &[Token]| -> Vec<AlignToken> {
            ts.iter()
                .enumerate()
                .map(|(i, t)| AlignToken {
                    id: u32::try_from(i).unwrap(),
                    weight: t.weight,
                    particle: t.particle,
                    initial: t.text.len() == 1,
                })
                .collect()
        };
        name_score(&to_align(&q), &to_align(&n), |a, b| {
            token_similarity(&q[a.id as usize].text, &n[b.id as usize].text)
        })
    }

    #[test]
    fn order_does_not_matter() {
        assert_eq!(score("Smith, John", "John Smith"), 1.0);
        assert_eq!(
            score("Ivanov Sergei Viktorovich", "Sergei Viktorovich Ivanov"),
            1.0
        );
    }

    #[test]
    fn one_missing_middle_name_costs_the_penalty_two_cost_the_match() {
        let s = score("Sergei Ivanov", "Sergei Viktorovich Ivanov");
        assert!((s - (1.0 - UNMATCHED_PENALTY)).abs() < 1e-9, "{s}");
        let s = score("Ana Maria Garcia", "Ana Maria Mendoza");
        assert!(s < 0.85, "{s}");
    }

    #[test]
    fn one_significant_token_is_not_enough_against_a_full_name() {
        assert_eq!(score("Ivanov", "Sergei Ivanov"), 0.0);
        assert_eq!(score("Mohammed", "Mohammed Ali Haddad"), 0.0);
        assert_eq!(score("Volganeft Logistics", "Volganeft"), 0.0);
        assert_eq!(score("Volganeft", "Volganeft LLC"), 1.0);
    }

    #[test]
    fn misspellings_lower_but_keep_a_match() {
        let s = score("Sergey Ivanoff", "Sergei Ivanov");
        assert!(s > 0.9 && s < 1.0, "{s}");
        let s = score("Jon Smyth", "John Smith");
        assert!(s > 0.88 && s < 0.95, "{s}");
        let s = score("Mohammed Qasim", "Muhammad Kassem");
        assert!(
            s >= SOUNDALIKE_SIMILARITY,
            "transliterations that sound alike pair: {s}"
        );
    }

    #[test]
    fn names_that_only_share_a_prefix_do_not_pair() {
        // Jaro-Winkler 0.88 and 0.87, but they sound different: different names.
        assert_eq!(token_similarity("milica", "milan"), 0.0);
        assert_eq!(token_similarity("goran", "zoran"), 0.0);
        assert_eq!(score("Milica Jovanovic", "Milan Jovanovic"), 0.0);
        assert!(
            token_similarity("castilo", "castillo") > 0.95,
            "a typo still pairs"
        );
    }

    #[test]
    fn names_that_contain_another_or_share_its_start_are_not_typos() {
        // Issue 43's common names (2026-12-05): flagged before by Jaro–Winkler alone.
        assert_eq!(token_similarity("rahimi", "ebrahimi"), 0.0);
        assert_eq!(token_similarity("aleksei", "aleksandrovich"), 0.0);
        assert_eq!(token_similarity("abdulrahman", "abdullah"), 0.0);
        assert_eq!(token_similarity("shammari", "shami"), 0.0);
        assert_eq!(score("Mohammad Rahimi", "Mohammad Ebrahimi"), 0.0);
        assert_eq!(
            score("Aleksei Fyodorov", "Yevgeny Aleksandrovich Fyodorov"),
            0.0
        );
        assert_eq!(
            score("Abdulrahman Al-Suwaidi", "Riyad Abdullah Al-Suwaidi"),
            0.0
        );
        assert!(
            token_similarity("ivanvo", "ivanov") > 0.9,
            "a swap is one edit"
        );
        assert_eq!(
            token_similarity("zhao", "zhou"),
            0.0,
            "one sound, `J`, is not enough"
        );
        assert_eq!(score("Junjie Zhao", "Zhou Junjie"), 0.0);
    }

    #[test]
    fn only_similar_names_in_swapped_roles_do_not_match() {
        assert_eq!(score("Ahmed Hassan", "Hossein Ahmadi"), 0.0);
        assert!(
            score("Ahmadi Hossein", "Hossein Ahmadi") > 0.99,
            "exact: order is free"
        );
        let s = score("Hosein Ahmadie", "Hossein Ahmadi");
        assert!(s > 0.9, "similar and in order: {s}");
    }

    #[test]
    fn particles_pair_only_with_particles() {
        // "al" would be 0.91 similar to "ali"; it must not stand in for it.
        assert_eq!(score("Al Hassan", "Ali Hassan"), 0.0);
        let with = score("Khalid bin Ibrahim Al-Tamimi", "Khalid Ibrahim Al-Tamimi");
        assert!(with > 0.97, "a particle costs little: {with}");
    }

    #[test]
    fn initials_support_a_match() {
        let s = score("John R. Smith", "John Robert Smith");
        assert!(s > 0.9 && s < 1.0, "{s}");
    }

    #[test]
    fn initials_with_the_exact_surname_match_at_a_lower_score() {
        // SPEC §4 (issue 43): `B. A. Kulikov`, `N S Haddad`.
        let full = "Boris Alekseevich Kulikov";
        let s = score("B. A. Kulikov", full);
        assert!((0.85..0.95).contains(&s), "{s}");
        let s = score("N S Haddad", "Nabil Samir Haddad");
        assert!((0.85..0.95).contains(&s), "{s}");
        let s = score("B. Kulikov", full);
        assert!((0.85..score("B. A. Kulikov", full)).contains(&s), "{s}");
        let s = score("J. Smith", "John Smith");
        assert!((0.85..1.0).contains(&s), "{s}");
        // The surname must be exact, every initial must start a given name.
        assert_eq!(score("B. A. Kulikof", full), 0.0);
        assert_eq!(score("V. A. Kulikov", full), 0.0);
        assert_eq!(score("B. A. Z. Kulikov", full), 0.0);
        assert_eq!(
            score("Kulikov", full),
            0.0,
            "a surname alone is still not enough"
        );
    }

    #[test]
    fn unrelated_names_score_zero() {
        assert_eq!(score("Hiroshi Tanaka", "Sergei Ivanov"), 0.0);
        assert_eq!(score("Sergei Petrov", "Sergei Viktorovich Ivanov"), 0.0);
    }
}
